package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/validator-manager/validator-manager/impl/apitest"
)

// TestFullDiskDegradesAndHeals: the embedded default's data directory on a
// small filesystem that fills up. etcd exits; the server stays up, health
// is DOWN with the cluster DOWN, a create answers 503 in release 1.11's
// shape within the request's deadline; once space is freed the engine has
// started etcd again, health is UP and a new create is provisioned, all
// without restarting the server.
func TestFullDiskDegradesAndHeals(t *testing.T) {
	t.Parallel()
	// etcd preallocates two 64 MB WAL segments; the rest is headroom.
	dataDir := apitest.SmallDisk(t, "320m")

	s := startServe(t, "--data-dir", dataDir, "--server.request-timeout=10s")
	ctx, logs, done, base := context.Background(), s.logs, s.done, s.base
	t.Cleanup(func() {
		s.cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("serve did not shut down")
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	waitHealthy(t, base, nil)
	c := client(t, base, dataDir)
	rc := adminConfig(t, dataDir)
	rc.Timeout = 5 * time.Second
	core := kubernetes.NewForConfigOrDie(rc)

	filler := apitest.FillDisk(t, dataDir, "filler")
	// Writes make etcd need space: it exits on the first it cannot make.
	// Started again, it runs until a write needs space again (its WAL
	// segment and database file have some left), so the writes go on
	// until an exit leaves etcd down, by the engine's growing restart
	// delay, for long enough to check what the server says meanwhile.
	churn, stopChurn := context.WithCancel(ctx)
	go writeConfigMaps(churn, core)
	eventually(t, 120*time.Second, "etcd down for 6 s more", func() bool {
		return etcdDownFor(t, logs.String(), time.Now()) >= 6*time.Second
	})
	stopChurn()
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"msg":"engine: etcd exited`) {
			t.Logf("%.600s", l)
			break
		}
	}
	hc := &http.Client{Timeout: 15 * time.Second} // beyond the request deadline: a hang fails
	eventually(t, 5*time.Second, "health DOWN with the cluster DOWN", func() bool {
		st, h := health(t, hc, base)
		return st == http.StatusServiceUnavailable && h.Status == "DOWN" && h.Components["cluster"].Status == "DOWN"
	})
	began := time.Now()
	r, err := c.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("lost"))
	if err != nil {
		t.Fatalf("create on a full disk: %v (after %s)", err, time.Since(began))
	}
	var body map[string]string
	if r.StatusCode() != http.StatusServiceUnavailable || json.Unmarshal(r.Body, &body) != nil || len(body) == 0 {
		t.Fatalf("create on a full disk: %d %s, want 503 with an error map", r.StatusCode(), r.Body)
	}
	t.Logf("create on a full disk: 503 after %s: %s", time.Since(began).Round(time.Millisecond), r.Body)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	eventually(t, 60*time.Second, "health UP after space was freed", func() bool {
		st, _ := health(t, hc, base)
		return st == http.StatusOK
	})
	t.Logf("healthy %s after space was freed", time.Since(freed).Round(time.Millisecond))
	select {
	case err := <-done:
		done <- err
		t.Fatalf("the server stopped: %v", err)
	default:
	}
	created, err := c.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("healed"))
	if err != nil || created.StatusCode() != http.StatusCreated {
		t.Fatalf("create after healing: %v %v %s", statusOf(created), err, created.Body)
	}
	validators := schema.GroupVersionResource{Group: "validator-manager.io", Version: "v1alpha1", Resource: "validators"}
	dyn := dynamic.NewForConfigOrDie(rc)
	eventually(t, 30*time.Second, "the Validator resource and its workloads", func() bool {
		if _, err := dyn.Resource(validators).Namespace("default").Get(ctx, "healed", metav1.GetOptions{}); err != nil {
			return false
		}
		_, err := core.AppsV1().Deployments("default").Get(ctx, "healed-participant", metav1.GetOptions{})
		return err == nil
	})
	if _, err := dyn.Resource(validators).Namespace("default").Get(ctx, "lost", metav1.GetOptions{}); err == nil {
		t.Error("the create answered 503 left a Validator resource")
	}
}

// etcdDownFor is how much longer etcd stays down, as of now, by the
// engine's log: the last line about etcd says it exited, or could not be
// started again, and when it is tried again (restartIn); 0 when it runs.
func etcdDownFor(t *testing.T, log string, now time.Time) time.Duration {
	t.Helper()
	type line struct {
		Time      time.Time
		RestartIn string
	}
	var last line
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, `"msg":"engine: etcd `) {
			continue
		}
		last = line{}
		if err := json.Unmarshal([]byte(l), &last); err != nil {
			t.Fatalf("engine log line %q: %v", l, err)
		}
	}
	if last.RestartIn == "" {
		return 0 // none, or "started again"
	}
	delay, err := time.ParseDuration(last.RestartIn)
	if err != nil {
		t.Fatalf("restartIn %q: %v", last.RestartIn, err)
	}
	return last.Time.Add(delay).Sub(now)
}

// writeConfigMaps creates ConfigMaps until ctx ends; their failures are
// the point.
func writeConfigMaps(ctx context.Context, core kubernetes.Interface) {
	data := strings.Repeat("x", 256<<10)
	for i := 0; ctx.Err() == nil; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("churn-%d", i), Namespace: "default"}, Data: map[string]string{"x": data}}
		if _, err := core.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

type healthBody struct {
	Status     string
	Components map[string]struct{ Status string }
}

func health(t *testing.T, hc *http.Client, base string) (int, healthBody) {
	t.Helper()
	resp, err := hc.Get(base + "/actuator/health")
	if err != nil {
		t.Fatalf("health: %v (the server must answer)", err)
	}
	defer resp.Body.Close()
	var h healthBody
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &h)
	return resp.StatusCode, h
}
