package app

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// auditPurgeInterval is how often the leader deletes entries older than audit.retention.
const auditPurgeInterval = time.Hour

// purgeAudit runs on the leader until ctx ends; nothing when audit.retention is 0.
func (a *App) purgeAudit(ctx context.Context) error {
	keep := a.Config.AuditRetention
	if keep <= 0 {
		return nil
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		n, err := a.Store.PurgeAudit(ctx, time.Now().Add(-keep))
		switch {
		case err != nil:
			a.Log.ErrorContext(ctx, "audit log purge failed", "retention", keep.String(), "error", err)
		case n > 0:
			a.Log.InfoContext(ctx, "audit log purged", "retention", keep.String(), "deleted", n)
		}
	}, auditPurgeInterval)
	return nil
}
