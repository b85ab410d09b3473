package workload

import (
	"cmp"

	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// What both layouts derive alike from a Validator (impl/charts too).

// NodeIdentifier is the configuration's node identifier, else v's name.
func NodeIdentifier(v *v1alpha1.Validator) string {
	return cmp.Or(ptr.Deref(v.Spec.Config.ParticipantNode.NodeIdentifier, ""), v.Name)
}

// WalletUser is the operator's wallet user (validatorWalletUser):
// clusterConfig.walletUserName, else auth.walletUser.
func WalletUser(v *v1alpha1.Validator) string {
	return cmp.Or(ptr.Deref(v.Spec.Config.Cluster.WalletUserName, ""), newLayout(v).auth().WalletUser)
}

// WalletEnabled: the wallet and its UIs run.
func WalletEnabled(v *v1alpha1.Validator) bool {
	return !ptr.Deref(v.Spec.Config.Cluster.DisabledWallet, false)
}

// ParticipantProbes: the participant has health probes, unless turned off
// for every workload or for it alone.
func ParticipantProbes(v *v1alpha1.Validator) bool {
	return newLayout(v).probes() && ptr.Deref(v.Spec.Config.ParticipantNode.EnableHealthProbes, true)
}

// ParticipantJVMOptions are the participant's JVM options.
func ParticipantJVMOptions(v *v1alpha1.Validator) string {
	c := &v.Spec.Config
	return cmp.Or(ptr.Deref(c.ParticipantNode.DefaultJVMOptions, ""), c.Cluster.DefaultJVMOptions)
}
