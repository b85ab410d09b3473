package nodesim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Command is the subcommand of the server's binary that runs the simulator
// in a process of its own, as a kubelet runs beside a cluster's control
// plane, so that its caches and work are not the server's.
const Command = "nodesim"

// Process is what the server tells the simulator's process.
type Process struct {
	// Kubeconfig reaches the API server with the node's credentials.
	Kubeconfig string
	// MetricsAddress is Options.MetricsAddress (host:port on loopback).
	MetricsAddress string
	// LogLevel is slog's: debug, info, warn, error.
	LogLevel string
	// Capacity is Options.Capacity (nil: its default).
	Capacity corev1.ResourceList
}

// Args are the arguments after Command.
func (p Process) Args() []string {
	args := []string{"--kubeconfig=" + p.Kubeconfig}
	if p.MetricsAddress != "" {
		args = append(args, "--metrics-listen="+p.MetricsAddress)
	}
	if p.LogLevel != "" {
		args = append(args, "--log-level="+p.LogLevel)
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		if q, ok := p.Capacity[name]; ok {
			args = append(args, fmt.Sprintf("--%s=%s", name, q.String()))
		}
	}
	return args
}

// Main runs the simulator of the command line args (Process.Args, and the
// Options' flags) until SIGTERM or SIGINT, logging JSON to stderr.
func Main(ctx context.Context, args []string, stderr io.Writer) error {
	fs := pflag.NewFlagSet(Command, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	var kubeconfig, level string
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server (required)")
	fs.StringVar(&o.NodeName, "node-name", "", "the simulated node's name (default embedded-node)")
	fs.StringVar(&o.Namespace, "namespace", "", "simulate this namespace's Pods only (default: every namespace)")
	fs.StringVar(&o.MetricsAddress, "metrics-listen", "", "serve metrics.k8s.io's pod metrics and /metrics on this address")
	fs.DurationVar(&o.ReadyDelay, "ready-delay", 0, "time from binding to running (default 1s)")
	fs.StringVar(&level, "log-level", "info", "debug, info, warn or error")
	capacity := map[corev1.ResourceName]*string{}
	for name, def := range defaultCapacity() {
		capacity[name] = fs.String(string(name), def.String(), "the node's "+string(name)+" capacity, all allocatable")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Capacity = corev1.ResourceList{}
	for name, v := range capacity {
		q, err := resource.ParseQuantity(*v)
		if err != nil || q.Sign() < 0 {
			return fmt.Errorf("%s: --%s: %q is not a quantity", Command, name, *v)
		}
		o.Capacity[name] = q
	}
	if kubeconfig == "" {
		return fmt.Errorf("%s: --kubeconfig is required", Command)
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return fmt.Errorf("%s: --log-level: %w", Command, err)
	}
	o.Logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: l})).With("process", Command)
	ctrllog.SetLogger(logr.FromSlogHandler(o.Logger.Handler()))
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("%s: %w", Command, err)
	}
	rc.UserAgent = "nodesim"
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	sim, err := New(rc, o)
	if err != nil {
		return err
	}
	return sim.Start(ctx)
}
