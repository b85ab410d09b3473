package cluster

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// WriteSecrets writes the secret values given (empty ones are left as they
// are) into the validator's Secrets, owned by its resource, over any value
// they held, and makes the resource's spec.secrets reference every one of
// its Secrets that exists (an operator may have created one by hand). The
// resource must exist.
func (k *Kube) WriteSecrets(ctx context.Context, validator string, secrets domain.ValidatorSecrets) error {
	return k.PutSecrets(ctx, validator, secrets, domain.SecretDefaults{})
}

// DefaultSecrets writes each value d gives into its Secret only where the
// Secret or its key is missing, never over a value (applied without force
// as an owner of its own: a key another owner set is a conflict, and left
// as it is), and references the validator's Secrets in spec.secrets. The
// resource must exist.
func (k *Kube) DefaultSecrets(ctx context.Context, validator string, d domain.SecretDefaults) error {
	return k.PutSecrets(ctx, validator, domain.ValidatorSecrets{}, d)
}

// PodStatus is the cache's transform of Pods.
var PodStatus = podStatus

// AppliedShape is the cache's transform of applied workloads, Services and ConfigMaps.
var AppliedShape = appliedShape

// CachedDeployment tells whether the cache holds the Deployment of that name.
func (k *Kube) CachedDeployment(name string) bool {
	return cached[appsv1.Deployment](context.Background(), k, name) != nil
}
