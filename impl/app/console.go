package app

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/validator-manager/validator-manager/impl/platform"
)

// console is release 2.0's ledger console: the sandbox's, or an exec in the participant pod.
func (a *App) console() (platform.ConsoleOptions, error) {
	cfg := a.Config
	c := platform.ConsoleOptions{IdleTimeout: cfg.ConsoleIdleTimeout, Audit: a.Store}
	core, err := kubernetes.NewForConfig(a.rest)
	if err != nil {
		return c, err
	}
	if cfg.EmbeddedDefault() && a.Sandbox != nil {
		sb := a.Sandbox
		c.Open = func(ctx context.Context, validator string) (platform.ConsoleSession, error) {
			s, err := sb.OpenConsole(ctx, validator)
			if err != nil {
				return nil, err
			}
			return s, nil
		}
	} else {
		c.Open = (&platform.ExecConsole{Core: core, Config: rest.CopyConfig(a.rest), Namespace: cfg.Namespace}).OpenConsole
	}
	return c, nil
}
