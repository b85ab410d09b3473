package app

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/validator-manager/validator-manager/impl/platform"
)

// console is release 2.0's ledger console: the sandbox's, or an exec in the participant pod.
func (a *App) console() (platform.ConsoleOptions, error) {
	c := platform.ConsoleOptions{IdleTimeout: a.Config.ConsoleIdleTimeout, Audit: a.Store}
	if sb := a.Sandbox; sb != nil { // the embedded default's
		c.Open = func(ctx context.Context, validator string) (platform.ConsoleSession, error) {
			s, err := sb.OpenConsole(ctx, validator)
			if err != nil {
				return nil, err
			}
			return s, nil
		}
		return c, nil
	}
	core, err := kubernetes.NewForConfig(a.rest)
	c.Open = (&platform.ExecConsole{Core: core, Config: rest.CopyConfig(a.rest), Namespace: a.Config.Namespace}).OpenConsole
	return c, err
}
