// Package v1alpha1 holds the types of validator-manager's custom resources
// in group validator-manager.io, version v1alpha1: the Validator resource,
// whose spec.config (ValidatorConfig) is also the stored format of a
// validator's configuration in the database.
//
// The CRD in deploy/crds, zz_generated.deepcopy.go and the apply
// configurations in gen/applyconfiguration (typed server-side apply) are
// generated from these types by controller-gen (make generate).
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +kubebuilder:ac:output:package=../../../gen/applyconfiguration
// +kubebuilder:validation:Optional
// +groupName=validator-manager.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of these resources.
	GroupVersion = schema.GroupVersion{Group: "validator-manager.io", Version: "v1alpha1"}

	// SchemeGroupVersion is GroupVersion under the name generated apply
	// configurations use.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers the types of this group and version.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this group and version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
