package nodesim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/embedded/nodesim"
)

func secret(name string, keys ...string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{}}
	for _, k := range keys {
		s.Data[k] = []byte("x")
	}
	return s
}

func configMap(name string, keys ...string) *corev1.ConfigMap {
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{}}
	for _, k := range keys {
		c.Data[k] = "x"
	}
	return c
}

func secretEnv(name, key string, optional bool) corev1.EnvVar {
	return corev1.EnvVar{Name: "V", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}}
}

func configMapEnv(name, key string, optional bool) corev1.EnvVar {
	return corev1.EnvVar{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}}
}

// create makes what the test needs, then the Pod "p" (podSpec edited by edit).
func create(t *testing.T, ns string, objects []any, edit func(*corev1.PodSpec)) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objects {
		if err := createObject(ctx, ns, o); err != nil {
			t.Fatal(err)
		}
	}
	spec := podSpec()
	if edit != nil {
		edit(&spec)
	}
	if _, err := core.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createObject(ctx context.Context, ns string, o any) error {
	var err error
	switch o := o.(type) {
	case *corev1.Secret:
		_, err = core.CoreV1().Secrets(ns).Create(ctx, o.DeepCopy(), metav1.CreateOptions{})
	case *corev1.ConfigMap:
		_, err = core.CoreV1().ConfigMaps(ns).Create(ctx, o.DeepCopy(), metav1.CreateOptions{})
	case *corev1.PersistentVolumeClaim:
		_, err = core.CoreV1().PersistentVolumeClaims(ns).Create(ctx, o.DeepCopy(), metav1.CreateOptions{})
	default:
		err = fmt.Errorf("cannot create %T", o)
	}
	return err
}

// state is what a test reads of Pod p: phase, node, and the first
// waiting container's reason and message (init containers first).
type state struct {
	phase           corev1.PodPhase
	bound, ready    bool
	reason, message string
}

func podState(t *testing.T, ns string) (*corev1.Pod, state) {
	p, err := core.CoreV1().Pods(ns).Get(context.Background(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := state{phase: p.Status.Phase, bound: p.Spec.NodeName != ""}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			s.ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && s.reason == "" {
			s.reason, s.message = w.Reason, w.Message
		}
	}
	return p, s
}

func waitState(t *testing.T, ns, what string, ok func(*corev1.Pod, state) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, 30*time.Second, what, func() (bool, string) {
		p, s := podState(t, ns)
		pod = p
		return ok(p, s), fmt.Sprintf("%+v", s)
	})
	return pod
}

func running(_ *corev1.Pod, s state) bool {
	return s.phase == corev1.PodRunning && s.ready && s.reason == ""
}

func warningEvent(t *testing.T, ns, reason string) string {
	t.Helper()
	var msg string
	eventually(t, 30*time.Second, "event "+reason, func() (bool, string) {
		evs, err := core.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", reason).String()})
		if err != nil || len(evs.Items) == 0 {
			return false, fmt.Sprint(err)
		}
		msg = evs.Items[0].Message
		return evs.Items[0].Type == corev1.EventTypeWarning && evs.Items[0].InvolvedObject.Name == "p", fmt.Sprintf("%+v", evs.Items[0])
	})
	return msg
}

// The kubelet's rules: each case makes a Pod that a kubelet could not start
// (or could, for optional references) and checks the reason and message it
// waits with, then, where given, creates what is missing and checks that
// the Pod starts.
func TestKubeletRules(t *testing.T) {
	tests := []struct {
		name    string
		objects []any
		edit    func(*corev1.PodSpec)
		// want: reason and message ("%s" is the namespace) of the waiting
		// container; empty reason: the Pod runs.
		reason, message string
		// then is created afterwards: the Pod must then run.
		then []any
	}{
		{"missing secret", nil, func(s *corev1.PodSpec) { s.Containers[0].Env = []corev1.EnvVar{secretEnv("db", "password", false)} },
			nodesim.ReasonCreateContainerConfigError, `secret "db" not found`, []any{secret("db", "password")}},
		{"missing secret key", []any{secret("db", "user")}, func(s *corev1.PodSpec) { s.Containers[0].Env = []corev1.EnvVar{secretEnv("db", "password", false)} },
			nodesim.ReasonCreateContainerConfigError, `couldn't find key password in Secret %s/db`, nil},
		{"optional references missing", []any{secret("db"), configMap("cfg")}, func(s *corev1.PodSpec) {
			s.Containers[0].Env = []corev1.EnvVar{secretEnv("absent", "k", true), secretEnv("db", "absent", true), configMapEnv("absent", "k", true), configMapEnv("cfg", "absent", true)}
			s.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}}}
			s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent", Optional: ptr.To(true)}}}}
		}, "", "", nil},
		{"missing configmap (envFrom)", nil, func(s *corev1.PodSpec) {
			s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
		}, nodesim.ReasonCreateContainerConfigError, `configmap "cfg" not found`, []any{configMap("cfg")}},
		{"missing configmap key", []any{configMap("cfg", "a")}, func(s *corev1.PodSpec) { s.Containers[0].Env = []corev1.EnvVar{configMapEnv("cfg", "b", false)} },
			nodesim.ReasonCreateContainerConfigError, `couldn't find key b in ConfigMap %s/cfg`, nil},
		{"unparsable image", nil, func(s *corev1.PodSpec) { s.Containers[0].Image = "Busybox:1.36" },
			nodesim.ReasonInvalidImageName, `Failed to apply default image tag "Busybox:1.36": couldn't parse image reference "Busybox:1.36": invalid reference format: repository name (library/Busybox) must be lowercase`, nil},
		{"image checked before configuration", nil, func(s *corev1.PodSpec) {
			s.Containers[0].Image = "registry.test/app:v1:v2"
			s.Containers[0].Env = []corev1.EnvVar{secretEnv("db", "password", false)}
		}, nodesim.ReasonInvalidImageName, `Failed to apply default image tag "registry.test/app:v1:v2": couldn't parse image reference "registry.test/app:v1:v2": invalid reference format`, nil},
		{"init container waits, the others wait for it", nil, func(s *corev1.PodSpec) {
			s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1.36", Env: []corev1.EnvVar{secretEnv("db", "password", false)}}}
		}, nodesim.ReasonCreateContainerConfigError, `secret "db" not found`, []any{secret("db", "password")}},
		{"image pull secret need not exist", nil, func(s *corev1.PodSpec) { s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}} }, "", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			create(t, ns, tc.objects, tc.edit)
			if tc.reason == "" {
				waitState(t, ns, "running", running)
				return
			}
			message := tc.message
			if strings.Contains(message, "%s") {
				message = fmt.Sprintf(message, ns)
			}
			p := waitState(t, ns, tc.reason, func(_ *corev1.Pod, s state) bool { return s.reason != "" })
			if _, s := podState(t, ns); s.reason != tc.reason || s.message != message || s.phase != corev1.PodPending || s.ready || !s.bound {
				t.Fatalf("got %+v, want bound, Pending, not ready, waiting in %s: %s", s, tc.reason, message)
			}
			if p.Status.PodIP == "" {
				t.Errorf("no pod IP: the sandbox exists when a container cannot be configured")
			}
			if tc.reason == nodesim.ReasonCreateContainerConfigError {
				if got := warningEvent(t, ns, "Failed"); got != "Error: "+message {
					t.Errorf("event: %q, want %q", got, "Error: "+message)
				}
			}
			if len(p.Spec.InitContainers) > 0 {
				if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Waiting == nil || cs[0].State.Waiting.Reason != "PodInitializing" {
					t.Errorf("app container: %+v, want waiting PodInitializing", cs)
				}
			}
			if tc.then == nil {
				return
			}
			for _, o := range tc.then {
				if err := createObject(context.Background(), ns, o); err != nil {
					t.Fatal(err)
				}
			}
			waitState(t, ns, "running once what it needs exists", running)
		})
	}
}

// A volume of a missing Secret or ConfigMap (or a missing item key) keeps
// every container from being created: ContainerCreating, no Pod IP, and a
// FailedMount event in the kubelet's words.
func TestKubeletMountRules(t *testing.T) {
	tests := []struct {
		name    string
		objects []any
		volume  corev1.VolumeSource
		message string
	}{
		{"missing secret", nil, corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}},
			`MountVolume.SetUp failed for volume "v" : secret "tls" not found`},
		{"missing secret item", []any{secret("tls", "crt")}, corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", Items: []corev1.KeyToPath{{Key: "key", Path: "k"}}}},
			`MountVolume.SetUp failed for volume "v" : references non-existent secret key: key`},
		{"missing configmap in a projected volume", nil, corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}},
			`MountVolume.SetUp failed for volume "v" : configmap "cfg" not found`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			create(t, ns, tc.objects, func(s *corev1.PodSpec) {
				s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: tc.volume}}
				s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}
			})
			p := waitState(t, ns, "ContainerCreating", func(_ *corev1.Pod, s state) bool { return s.reason != "" })
			if _, s := podState(t, ns); s.reason != "ContainerCreating" || s.phase != corev1.PodPending || p.Status.PodIP != "" {
				t.Fatalf("got %+v ip %q, want Pending, waiting in ContainerCreating, no pod IP", s, p.Status.PodIP)
			}
			if got := warningEvent(t, ns, "FailedMount"); got != tc.message {
				t.Errorf("FailedMount: %q, want %q", got, tc.message)
			}
		})
	}
}

// A Pod whose claim does not exist is not bound: PodScheduled False,
// Unschedulable, naming the claim; it runs once the claim is made.
func TestKubeletMissingClaim(t *testing.T) {
	ns := namespace(t)
	create(t, ns, nil, func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	})
	want := `0/1 nodes are available: persistentvolumeclaim "data" not found. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.`
	waitState(t, ns, "unschedulable", func(p *corev1.Pod, s state) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && c.Message == want && !s.bound && s.phase == corev1.PodPending
			}
		}
		return false
	})
	if got := warningEvent(t, ns, "FailedScheduling"); got != want {
		t.Errorf("FailedScheduling: %q, want %q", got, want)
	}
	err := createObject(context.Background(), ns, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, ns, "running once the claim exists", func(p *corev1.Pod, s state) bool { return running(p, s) && s.bound })
}

// The kubelet resolves a container's configuration when it starts it: a
// running Pod keeps running when its Secret is deleted.
func TestRunningPodKeepsRunningWithoutItsSecret(t *testing.T) {
	ns := namespace(t)
	create(t, ns, []any{secret("db", "password")}, func(s *corev1.PodSpec) {
		s.Containers[0].Env = []corev1.EnvVar{secretEnv("db", "password", false)}
	})
	waitState(t, ns, "running", running)
	ctx := context.Background()
	if err := core.CoreV1().Secrets(ns).Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A second Pod that needs the Secret waits for it: the simulator has
	// seen the deletion (and the first Pod's turn came with it).
	q := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: podSpec()}
	q.Spec.Containers[0].Env = []corev1.EnvVar{secretEnv("db", "password", false)}
	if _, err := core.CoreV1().Pods(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "second pod waits for the deleted Secret", func() (bool, string) {
		q, err := core.CoreV1().Pods(ns).Get(ctx, "q", metav1.GetOptions{})
		if err != nil || len(q.Status.ContainerStatuses) == 0 {
			return false, fmt.Sprint(err)
		}
		w := q.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == nodesim.ReasonCreateContainerConfigError, fmt.Sprintf("%+v", q.Status.ContainerStatuses)
	})
	if _, s := podState(t, ns); !running(nil, s) {
		t.Errorf("after its Secret was deleted: %+v, want still running and ready", s)
	}
}
