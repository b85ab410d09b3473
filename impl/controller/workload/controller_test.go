package workload_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	metaac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	validatorac "github.com/validator-manager/validator-manager/gen/applyconfiguration/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
	"github.com/validator-manager/validator-manager/impl/podrefs"
)

var namespaces atomic.Int32

// create makes a fresh namespace and the Validator v1 in it (sample, edited
// by edit), and returns the Validator as the API server stored it.
func create(t *testing.T, edit func(*v1alpha1.Validator)) *v1alpha1.Validator {
	t.Helper()
	if apiServer == nil {
		t.Skip(skipNoServer)
	}
	ctx := context.Background()
	ns := fmt.Sprintf("wl-%d", namespaces.Add(1))
	if err := apiServer.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	v := sample("v1")
	v.Namespace, v.UID, v.Generation = ns, "", 0
	if edit != nil {
		edit(v)
	}
	if err := apiServer.Create(ctx, v); err != nil {
		t.Fatalf("create validator: %v", err)
	}
	return v
}

// eventually polls cond until it holds (nil) or 20 s pass.
func eventually(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}

func key(v *v1alpha1.Validator, component string) types.NamespacedName {
	return types.NamespacedName{Namespace: v.Namespace, Name: workload.Name(v.Name, component)}
}

func getDeployment(ctx context.Context, v *v1alpha1.Validator, component string) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	err := apiServer.Get(ctx, key(v, component), &d)
	return &d, err
}

func TestControllerCreatesWorkloads(t *testing.T) {
	v := create(t, nil)
	ctx := context.Background()
	components := []string{workload.Participant, workload.ValidatorApp, workload.WalletUI, workload.ANSUI}
	eventually(t, "workloads exist", func(ctx context.Context) error {
		for _, c := range components {
			if _, err := getDeployment(ctx, v, c); err != nil {
				return err
			}
		}
		var st appsv1.StatefulSet
		if err := apiServer.Get(ctx, key(v, workload.Postgres), &st); err != nil {
			return err
		}
		// The database's Service is applied after its StatefulSet.
		return apiServer.Get(ctx, key(v, workload.Postgres), &corev1.Service{})
	})
	for _, c := range append(components, workload.Postgres) {
		var svc corev1.Service
		if err := apiServer.Get(ctx, key(v, c), &svc); err != nil {
			t.Errorf("Service %s: %v", c, err)
			continue
		}
		if ref := metav1.GetControllerOf(&svc); ref == nil || ref.UID != v.UID {
			t.Errorf("Service %s: owner %+v, want Validator %s", c, ref, v.UID)
		}
	}
	for _, c := range components {
		d, _ := getDeployment(ctx, v, c)
		if ref := metav1.GetControllerOf(d); ref == nil || ref.UID != v.UID || ref.Kind != "Validator" {
			t.Errorf("Deployment %s: owner %+v, want Validator %s", c, ref, v.UID)
		}
		if d.Spec.Template.Spec.Containers[0].Image != "ghcr.io/example/docker/"+map[string]string{
			workload.Participant: "canton-participant", workload.ValidatorApp: "validator-app",
			workload.WalletUI: "wallet-web-ui", workload.ANSUI: "ans-web-ui"}[c]+":0.5.1" {
			t.Errorf("Deployment %s: image %s", c, d.Spec.Template.Spec.Containers[0].Image)
		}
		if mf := d.ManagedFields; len(mf) == 0 || mf[0].Manager != workload.FieldOwner || mf[0].Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("Deployment %s: managed fields %+v, want applied by %s", c, mf, workload.FieldOwner)
		}
	}
	p, _ := getDeployment(ctx, v, workload.Participant)
	pc := p.Spec.Template.Spec.Containers[0]
	if pc.Resources.Limits.Memory().String() != "4Gi" || pc.Resources.Requests.Cpu().String() != "500m" {
		t.Errorf("participant resources %+v", pc.Resources)
	}
	if pc.ReadinessProbe == nil || pc.ReadinessProbe.GRPC == nil || pc.LivenessProbe == nil {
		t.Errorf("participant probes %+v %+v", pc.ReadinessProbe, pc.LivenessProbe)
	}
	if e := env(pc, "CANTON_PARTICIPANT_POSTGRES_PASSWORD"); e == nil || e.ValueFrom.SecretKeyRef.Name != "v1-database" {
		t.Errorf("participant password env %+v", e)
	}
	if ps := p.Spec.Template.Spec.ImagePullSecrets; len(ps) != 1 || ps[0].Name != "regcred" {
		t.Errorf("image pull secrets %v", ps)
	}
	app, _ := getDeployment(ctx, v, workload.ValidatorApp)
	ac := app.Spec.Template.Spec.Containers[0]
	if e := env(ac, "SPLICE_APP_VALIDATOR_ONBOARDING_SECRET"); e == nil || e.ValueFrom.SecretKeyRef.Name != "v1-onboarding" {
		t.Errorf("onboarding env %+v", e)
	}
	if e := env(ac, "SPLICE_APP_VALIDATOR_SCAN_ADDRESS"); e == nil || e.Value != "http://scan.example.test" {
		t.Errorf("scan env %+v", e)
	}
	// The migration dump claim is created, without owner, and a claim
	// already there (changed by an operator) is left as it is.
	var dump corev1.PersistentVolumeClaim
	if err := apiServer.Get(ctx, types.NamespacedName{Namespace: v.Namespace, Name: workload.MigrationDumpClaimName(v.Name)}, &dump); err != nil {
		t.Errorf("dump claim: %v", err)
	} else if len(dump.OwnerReferences) != 0 || dump.Spec.Resources.Requests.Storage().String() != "10G" {
		t.Errorf("dump claim %+v, want 10G without owner", dump)
	}
	var st appsv1.StatefulSet
	if err := apiServer.Get(ctx, key(v, workload.Postgres), &st); err != nil {
		t.Fatal(err)
	}
	if got := st.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "20Gi" {
		t.Errorf("database storage %s, want 20Gi", got.String())
	}
}

func TestControllerDisableProbes(t *testing.T) {
	v := create(t, func(v *v1alpha1.Validator) { v.Spec.Config.Cluster.DisableProbes = ptr.To(true) })
	eventually(t, "workloads exist", func(ctx context.Context) error {
		var st appsv1.StatefulSet
		return apiServer.Get(ctx, key(v, workload.Postgres), &st)
	})
	for _, c := range []string{workload.Participant, workload.ValidatorApp} {
		d, err := getDeployment(context.Background(), v, c)
		if err != nil {
			t.Fatal(err)
		}
		if ctr := d.Spec.Template.Spec.Containers[0]; ctr.LivenessProbe != nil || ctr.ReadinessProbe != nil {
			t.Errorf("%s has probes", c)
		}
	}
}

func TestControllerExternalDatabase(t *testing.T) {
	v := create(t, func(v *v1alpha1.Validator) {
		v.Spec.ExternalDatabase = true
		v.Spec.Config.Database = &v1alpha1.Database{External: ptr.To(true), Hostname: ptr.To("db.example.test"), Port: ptr.To("5432")}
	})
	eventually(t, "status written", func(ctx context.Context) error {
		var cur v1alpha1.Validator
		if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &cur); err != nil {
			return err
		}
		if meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionDatabaseReady) == nil {
			return fmt.Errorf("no DatabaseReady condition yet: %+v", cur.Status)
		}
		return nil
	})
	var st appsv1.StatefulSet
	if err := apiServer.Get(context.Background(), key(v, workload.Postgres), &st); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet: got %v, want not found", err)
	}
}

// markAvailable writes the status the Deployment controller would write
// once the pods are ready (envtest runs no kube-controller-manager).
func markAvailable(t *testing.T, v *v1alpha1.Validator, component string) {
	t.Helper()
	eventually(t, "mark "+component+" available", func(ctx context.Context) error {
		d, err := getDeployment(ctx, v, component)
		if err != nil {
			return err
		}
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
				Reason: "MinimumReplicasAvailable", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		}
		return apiServer.Status().Update(ctx, d)
	})
}

func waitPhase(t *testing.T, v *v1alpha1.Validator, want v1alpha1.Phase) *v1alpha1.Validator {
	t.Helper()
	var cur v1alpha1.Validator
	eventually(t, "phase "+string(want), func(ctx context.Context) error {
		if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &cur); err != nil {
			return err
		}
		if cur.Status.Phase != want {
			return fmt.Errorf("phase %q, conditions %+v", cur.Status.Phase, cur.Status.Conditions)
		}
		return nil
	})
	return &cur
}

// writeReads writes every Secret and ConfigMap v's pod templates read,
// with the keys they read (the intent controller's part on a server); a
// Secret that exists is left as it is.
func writeReads(t *testing.T, v *v1alpha1.Validator) {
	t.Helper()
	ctx := context.Background()
	data := map[podrefs.Kind]map[string]map[string]string{podrefs.Secret: {}, podrefs.ConfigMap: {}}
	for _, o := range workload.Desired(v) {
		var spec *corev1.PodSpec
		switch w := o.(type) {
		case *appsv1.Deployment:
			spec = &w.Spec.Template.Spec
		case *appsv1.StatefulSet:
			spec = &w.Spec.Template.Spec
		default:
			continue
		}
		for _, r := range podrefs.All(spec) {
			if data[r.Kind][r.Name] == nil {
				data[r.Kind][r.Name] = map[string]string{}
			}
			for _, k := range r.Keys {
				data[r.Kind][r.Name][k] = "x"
			}
		}
	}
	for name, keys := range data[podrefs.Secret] {
		if err := apiServer.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v.Namespace}, StringData: keys}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for name, keys := range data[podrefs.ConfigMap] {
		if err := apiServer.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v.Namespace}, Data: keys}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitCondition waits until v's condition typ has reason and a message
// containing message.
func waitCondition(t *testing.T, v *v1alpha1.Validator, typ, reason, message string) *v1alpha1.Validator {
	t.Helper()
	var cur v1alpha1.Validator
	eventually(t, typ+" "+reason, func(ctx context.Context) error {
		if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &cur); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, typ); c == nil || c.Reason != reason || !strings.Contains(c.Message, message) {
			return fmt.Errorf("phase %s, %s: %+v", cur.Status.Phase, typ, c)
		}
		return nil
	})
	return &cur
}

// The status says why a pod cannot start: a Secret the templates read that
// does not exist (named; the validator stays PENDING though its Deployments
// are available, since no pod could restart), until it is written; then a
// pod the kubelet reports waiting, with the kubelet's reason and message.
func TestControllerReportsWhyPodsCannotStart(t *testing.T) {
	v := create(t, nil)
	ctx := context.Background()
	cur := waitCondition(t, v, v1alpha1.ConditionParticipantReady, workload.ReasonSecretNotFound, `secret "v1-database" not found`)
	for _, c := range []string{workload.Participant, workload.ValidatorApp, workload.WalletUI, workload.ANSUI} {
		markAvailable(t, v, c)
	}
	cur = waitCondition(t, v, v1alpha1.ConditionReady, workload.ReasonSecretNotFound, `secret "v1-database" not found`)
	if cur.Status.Phase != v1alpha1.PhasePending {
		t.Errorf("phase %s with a Secret missing, want PENDING", cur.Status.Phase)
	}
	writeReads(t, v)
	waitPhase(t, v, v1alpha1.PhaseRunning) // the database StatefulSet is not ready
	// Deleted by hand: out of RUNNING, naming it, until it is back.
	db := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "v1-database", Namespace: v.Namespace}}
	if err := apiServer.Delete(ctx, db); err != nil {
		t.Fatal(err)
	}
	cur = waitCondition(t, v, v1alpha1.ConditionReady, workload.ReasonSecretNotFound, `secret "v1-database" not found`)
	if cur.Status.Phase != v1alpha1.PhasePending {
		t.Errorf("phase %s with the database Secret deleted, want PENDING", cur.Status.Phase)
	}
	db.StringData = map[string]string{"password": "x"}
	if err := apiServer.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, v, v1alpha1.PhaseRunning)
	// A pod of the participant that the kubelet cannot start.
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "v1-participant-x", Namespace: v.Namespace,
			Labels: map[string]string{workload.ValidatorLabel: v.Name, workload.ComponentLabel: workload.Participant}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "participant", Image: "busybox:1.36"}}},
	}
	if err := apiServer.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "participant", Image: "busybox:1.36",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `couldn't find key password in Secret ` + v.Namespace + `/v1-database`}}}}}
	if err := apiServer.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	cur = waitCondition(t, v, v1alpha1.ConditionParticipantReady, "CreateContainerConfigError", `pod v1-participant-x container participant: couldn't find key password in Secret `+v.Namespace+`/v1-database`)
	if cur.Status.Phase != v1alpha1.PhasePending {
		t.Errorf("phase %s with a participant pod waiting, want PENDING", cur.Status.Phase)
	}
}

// A key a pod template reads that its Secret lacks is named in the status
// at once, before any pod tries (the cache keeps the Secrets' keys), and
// holds the validator PENDING though its Deployments are available, until
// the key is written.
func TestControllerReportsMissingKey(t *testing.T) {
	v := create(t, nil)
	ctx := context.Background()
	writeReads(t, v)
	auth := &corev1.Secret{}
	if err := apiServer.Get(ctx, types.NamespacedName{Namespace: v.Namespace, Name: "v1-ledger-api-auth"}, auth); err != nil {
		t.Fatal(err)
	}
	delete(auth.Data, "client-secret")
	auth.Data["client-id"] = []byte("x")
	if err := apiServer.Update(ctx, auth); err != nil {
		t.Fatal(err)
	}
	const lacks = `Deployment v1-validator-app: secret "v1-ledger-api-auth" has no key "client-secret"`
	waitCondition(t, v, v1alpha1.ConditionValidatorAppReady, workload.ReasonSecretKeyMissing, lacks)
	for _, c := range []string{workload.Participant, workload.ValidatorApp, workload.WalletUI, workload.ANSUI} {
		markAvailable(t, v, c)
	}
	cur := waitCondition(t, v, v1alpha1.ConditionReady, workload.ReasonSecretKeyMissing, lacks)
	if cur.Status.Phase != v1alpha1.PhasePending {
		t.Errorf("phase %s with a key missing, want PENDING", cur.Status.Phase)
	}
	var pods corev1.PodList
	if err := apiServer.List(ctx, &pods, client.InNamespace(v.Namespace)); err != nil || len(pods.Items) != 0 {
		t.Errorf("pods %d (%v), want none: the status needs no pod to say it", len(pods.Items), err)
	}
	auth.Data["client-secret"] = []byte("x")
	if err := apiServer.Update(ctx, auth); err != nil {
		t.Fatal(err)
	}
	cur = waitPhase(t, v, v1alpha1.PhaseRunning) // the database StatefulSet is not ready
	if c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionValidatorAppReady); c == nil || c.Reason != workload.ReasonAvailable {
		t.Errorf("ValidatorAppReady %+v, want reason %s", c, workload.ReasonAvailable)
	}
}

func TestControllerStatus(t *testing.T) {
	v := create(t, nil)
	writeReads(t, v)
	cur := waitPhase(t, v, v1alpha1.PhasePending)
	if c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionParticipantReady); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("ParticipantReady %+v, want False", c)
	}
	markAvailable(t, v, workload.Participant)
	markAvailable(t, v, workload.ValidatorApp)
	cur = waitPhase(t, v, v1alpha1.PhaseRunning)
	if !meta.IsStatusConditionTrue(cur.Status.Conditions, v1alpha1.ConditionValidatorAppReady) ||
		meta.IsStatusConditionTrue(cur.Status.Conditions, v1alpha1.ConditionReady) || cur.Status.DatabaseReady {
		t.Errorf("status %+v, want the apps ready, not the whole validator", cur.Status)
	}
	if cur.Status.ObservedGeneration != cur.Generation {
		t.Errorf("observedGeneration %d, want %d", cur.Status.ObservedGeneration, cur.Generation)
	}
	markAvailable(t, v, workload.WalletUI)
	markAvailable(t, v, workload.ANSUI)
	eventually(t, "database ready", func(ctx context.Context) error {
		var st appsv1.StatefulSet
		if err := apiServer.Get(ctx, key(v, workload.Postgres), &st); err != nil {
			return err
		}
		st.Status = appsv1.StatefulSetStatus{ObservedGeneration: st.Generation, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			CurrentReplicas: 1, UpdatedReplicas: 1, CurrentRevision: "r1", UpdateRevision: "r1"}
		return apiServer.Status().Update(ctx, &st)
	})
	cur = waitPhase(t, v, v1alpha1.PhaseCompleted)
	if !cur.Status.DatabaseReady || !meta.IsStatusConditionTrue(cur.Status.Conditions, v1alpha1.ConditionReady) {
		t.Errorf("status %+v, want database ready and Ready", cur.Status)
	}
}

func TestControllerEditChangesWorkloads(t *testing.T) {
	v := create(t, nil)
	eventually(t, "participant exists", func(ctx context.Context) error { _, err := getDeployment(ctx, v, workload.Participant); return err })
	eventually(t, "edit", func(ctx context.Context) error {
		var cur v1alpha1.Validator
		if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &cur); err != nil {
			return err
		}
		cur.Spec.Config.ImageTag = "0.5.2"
		cur.Spec.Config.Cluster.DisabledWallet = ptr.To(true)
		return apiServer.Update(ctx, &cur)
	})
	eventually(t, "new image", func(ctx context.Context) error {
		d, err := getDeployment(ctx, v, workload.Participant)
		if err != nil {
			return err
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/example/docker/canton-participant:0.5.2" {
			return fmt.Errorf("image %s", img)
		}
		return nil
	})
	eventually(t, "UIs removed with the wallet", func(ctx context.Context) error {
		for _, c := range []string{workload.WalletUI, workload.ANSUI} {
			if _, err := getDeployment(ctx, v, c); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s: %v", c, err)
			}
		}
		return nil
	})
}

func TestControllerCorrectsDrift(t *testing.T) {
	v := create(t, nil)
	ctx := context.Background()
	eventually(t, "validator app exists", func(ctx context.Context) error { _, err := getDeployment(ctx, v, workload.ValidatorApp); return err })

	// Edited by hand (an Update, as kubectl edit does).
	eventually(t, "hand edit", func(ctx context.Context) error {
		d, err := getDeployment(ctx, v, workload.ValidatorApp)
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = "example.test/other:1"
		d.Spec.Replicas = ptr.To[int32](3)
		return apiServer.Update(ctx, d, client.FieldOwner("kubectl-edit"))
	})
	eventually(t, "hand edit corrected", func(ctx context.Context) error {
		d, err := getDeployment(ctx, v, workload.ValidatorApp)
		if err != nil {
			return err
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/example/docker/validator-app:0.5.1" || *d.Spec.Replicas != 1 {
			return fmt.Errorf("image %s replicas %d", img, *d.Spec.Replicas)
		}
		return nil
	})

	// Deleted by hand.
	old, err := getDeployment(ctx, v, workload.Participant)
	if err != nil {
		t.Fatal(err)
	}
	if err := apiServer.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deleted Deployment recreated", func(ctx context.Context) error {
		d, err := getDeployment(ctx, v, workload.Participant)
		if err != nil {
			return err
		}
		if d.UID == old.UID {
			return fmt.Errorf("still the old Deployment")
		}
		return nil
	})

	var svc corev1.Service
	if err := apiServer.Get(ctx, key(v, workload.Participant), &svc); err != nil {
		t.Fatal(err)
	}
	if err := apiServer.Delete(ctx, &svc); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deleted Service recreated", func(ctx context.Context) error {
		var s corev1.Service
		if err := apiServer.Get(ctx, key(v, workload.Participant), &s); err != nil {
			return err
		}
		if s.UID == svc.UID {
			return fmt.Errorf("still the old Service")
		}
		return nil
	})
}

// TestControllerGrowsDataClaim: a larger spec.databaseStorage grows the
// bound claim of the internal database (its request, by a merge patch),
// through a storage class that allows expansion; a smaller one leaves it.
func TestControllerGrowsDataClaim(t *testing.T) {
	const class = "expandable"
	v := create(t, func(v *v1alpha1.Validator) { v.Spec.DatabaseStorage, v.Spec.StorageClass = "10Gi", class })
	ctx := context.Background()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "csi.example.test", AllowVolumeExpansion: ptr.To(true)}
	if err := apiServer.Create(ctx, sc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The claim and its volume, bound, as the StatefulSet controller and a
	// provisioner would make them.
	name := workload.DataClaimName(v.Name)
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: v.Namespace + "-data"}, Spec: corev1.PersistentVolumeSpec{
		Capacity: size, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: class,
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.test", VolumeHandle: v.Namespace}},
		ClaimRef:               &corev1.ObjectReference{Namespace: v.Namespace, Name: name},
	}}
	if err := apiServer.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: v.Namespace, Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To(class), VolumeName: pv.Name,
		Resources: corev1.VolumeResourceRequirements{Requests: size},
	}}
	if err := apiServer.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: size, AccessModes: pvc.Spec.AccessModes}
	if err := apiServer.Status().Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	storage := func(s string) {
		eventually(t, "edit to "+s, func(ctx context.Context) error {
			var cur v1alpha1.Validator
			if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &cur); err != nil {
				return err
			}
			cur.Spec.DatabaseStorage = s
			return apiServer.Update(ctx, &cur)
		})
	}
	requested := func(ctx context.Context) (resource.Quantity, error) {
		var cur corev1.PersistentVolumeClaim
		err := apiServer.Get(ctx, client.ObjectKeyFromObject(pvc), &cur)
		return cur.Spec.Resources.Requests[corev1.ResourceStorage], err
	}
	storage("20Gi")
	eventually(t, "claim grown to 20Gi", func(ctx context.Context) error {
		q, err := requested(ctx)
		if err != nil || q.String() != "20Gi" {
			return fmt.Errorf("requests %s (%v)", q.String(), err)
		}
		return nil
	})
	// Smaller: the StatefulSet follows the edit, the claim does not.
	storage("15Gi")
	eventually(t, "statefulset applied after the edit", func(ctx context.Context) error {
		var cur v1alpha1.Validator
		if err := apiServer.Get(ctx, client.ObjectKeyFromObject(v), &cur); err != nil {
			return err
		}
		if cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("observed generation %d of %d", cur.Status.ObservedGeneration, cur.Generation)
		}
		return nil
	})
	if q, err := requested(ctx); err != nil || q.String() != "20Gi" {
		t.Errorf("after a smaller databaseStorage: requests %s (%v), want 20Gi kept", q.String(), err)
	}
}

// The intent controller's Provisioned condition, applied to the status
// under a field owner of its own, survives the workload controller's status
// writes, and its later applies leave the workload controller's conditions
// alone: the two writers never overwrite each other's conditions.
func TestControllerKeepsAnotherWritersCondition(t *testing.T) {
	v := create(t, nil)
	ctx := context.Background()
	waitCondition(t, v, v1alpha1.ConditionParticipantReady, workload.ReasonSecretNotFound, `secret "v1-database" not found`)
	provisioned := func(status metav1.ConditionStatus, reason string) {
		t.Helper()
		c := metaac.Condition().WithType(v1alpha1.ConditionProvisioned).WithStatus(status).WithReason(reason).
			WithMessage("the intent controller's").WithLastTransitionTime(metav1.Now())
		ac := validatorac.Validator(v.Name, v.Namespace).WithStatus(validatorac.ValidatorStatus().WithConditions(c))
		if err := apiServer.Status().Apply(ctx, ac, client.FieldOwner("validator-manager-intent"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
	}
	provisioned(metav1.ConditionFalse, "WalletUserConflict")
	// The workload controller writes its conditions anew once the reads exist.
	writeReads(t, v)
	cur := waitCondition(t, v, v1alpha1.ConditionParticipantReady, workload.ReasonUnavailable, "")
	if c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionProvisioned); c == nil || c.Reason != "WalletUserConflict" {
		t.Fatalf("Provisioned %+v after the workload controller's write, want WalletUserConflict kept", c)
	}
	provisioned(metav1.ConditionTrue, "Provisioned")
	cur = waitCondition(t, v, v1alpha1.ConditionProvisioned, "Provisioned", "")
	for _, typ := range []string{v1alpha1.ConditionParticipantReady, v1alpha1.ConditionValidatorAppReady, v1alpha1.ConditionDatabaseReady, v1alpha1.ConditionReady} {
		if meta.FindStatusCondition(cur.Status.Conditions, typ) == nil {
			t.Fatalf("%s gone after the intent controller's apply: %+v", typ, cur.Status.Conditions)
		}
	}
	if cur.Status.Phase != v1alpha1.PhasePending {
		t.Fatalf("phase %s, want PENDING kept", cur.Status.Phase)
	}
}
