package workload

import (
	"cmp"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// What the built-in layout derives from a Validator, for the chart
// renderer's values (impl/charts): one derivation for both layouts.

// NodeIdentifier is the participant's node identifier: the configuration's,
// else the validator's name.
func NodeIdentifier(v *v1alpha1.Validator) string { return newLayout(v).nodeIdentifier() }

// WalletUser is the validator operator's wallet user.
func WalletUser(v *v1alpha1.Validator) string { return newLayout(v).walletUser() }

// WalletEnabled: the wallet and its UIs run.
func WalletEnabled(v *v1alpha1.Validator) bool { return newLayout(v).walletEnabled() }

// ParticipantProbes: the participant has health probes.
func ParticipantProbes(v *v1alpha1.Validator) bool { return newLayout(v).participantProbes() }

// participantProbes: the participant chart's enableHealthProbes, which the
// configuration may turn off for the participant alone.
func (b layout) participantProbes() bool {
	return b.probes() && ptr.Deref(b.cfg.ParticipantNode.EnableHealthProbes, true)
}

// ParticipantJVMOptions are the participant's JVM options.
func ParticipantJVMOptions(v *v1alpha1.Validator) string { return newLayout(v).participantJVMOptions() }

func (b layout) participantJVMOptions() string {
	return cmp.Or(ptr.Deref(b.cfg.ParticipantNode.DefaultJVMOptions, ""), b.cfg.Cluster.DefaultJVMOptions)
}
