package app

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/validator-manager/validator-manager/impl/platform"
)

// gatewayAndConsole builds release 2.0's wallet gateway state and console:
// the cluster's Secrets hold the gateway's state; consoles are the sandbox
// participants' on the embedded default, an exec session in the
// participant pod on a real cluster.
func (a *App) gatewayAndConsole() (platform.GatewayState, platform.ConsoleOptions, error) {
	cfg := a.Config
	c := platform.ConsoleOptions{IdleTimeout: cfg.ConsoleIdleTimeout, Audit: a.Store}
	core, err := kubernetes.NewForConfig(a.rest)
	if err != nil {
		return nil, c, err
	}
	if cfg.EmbeddedDefault() && a.Sandbox != nil {
		sb := a.Sandbox
		c.Opener = platform.ConsoleOpenerFunc(func(ctx context.Context, validator string) (platform.ConsoleSession, error) {
			s, err := sb.OpenConsole(ctx, validator)
			if err != nil {
				return nil, err
			}
			return s, nil
		})
	} else {
		c.Opener = &platform.ExecConsole{Core: core, Config: rest.CopyConfig(a.rest), Namespace: cfg.Namespace}
	}
	return &platform.SecretGateway{Core: core, Namespace: cfg.Namespace}, c, nil
}
