package workload

import (
	"cmp"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// What the built-in layout derives from a Validator, which the chart
// renderer's values (impl/charts) derive alike: one derivation for both
// layouts.

// NodeIdentifier is the participant's node identifier: the configuration's,
// else the validator's name.
func NodeIdentifier(v *v1alpha1.Validator) string {
	return cmp.Or(ptr.Deref(v.Spec.Config.ParticipantNode.NodeIdentifier, ""), v.Name)
}

// WalletUser is the validator operator's wallet user (the chart's
// validatorWalletUser): clusterConfig.walletUserName when given, else the
// configuration's auth.walletUser (the created wallet user's subject
// without custom auth).
func WalletUser(v *v1alpha1.Validator) string {
	return cmp.Or(ptr.Deref(v.Spec.Config.Cluster.WalletUserName, ""), newLayout(v).auth().WalletUser)
}

// WalletEnabled: the wallet and its UIs run.
func WalletEnabled(v *v1alpha1.Validator) bool {
	return !ptr.Deref(v.Spec.Config.Cluster.DisabledWallet, false)
}

// ParticipantProbes: the participant has health probes (the participant
// chart's enableHealthProbes), unless the configuration turns them off for
// every workload or for the participant alone.
func ParticipantProbes(v *v1alpha1.Validator) bool {
	return newLayout(v).probes() && ptr.Deref(v.Spec.Config.ParticipantNode.EnableHealthProbes, true)
}

// ParticipantJVMOptions are the participant's JVM options.
func ParticipantJVMOptions(v *v1alpha1.Validator) string {
	c := &v.Spec.Config
	return cmp.Or(ptr.Deref(c.ParticipantNode.DefaultJVMOptions, ""), c.Cluster.DefaultJVMOptions)
}
