package nodesim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/impl/embedded/nodesim"
)

func fromSecret(name, key string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
}

// client is a pod spec logging in to the server pg with the Secret key
// password (and rotating to newKey unless "").
func client(password, newKey string) corev1.PodSpec {
	spec := podSpec()
	spec.Containers[0].Env = []corev1.EnvVar{
		{Name: "PGHOST", Value: "pg"}, {Name: "PGUSER", Value: "cnadmin"},
		{Name: "PGPASSWORD", ValueFrom: fromSecret("db", password)},
	}
	if newKey != "" {
		spec.Containers[0].Env = append(spec.Containers[0].Env, corev1.EnvVar{Name: nodesim.NewPasswordVar, ValueFrom: fromSecret("db", newKey)})
	}
	return spec
}

// TestDatabasePasswordIsChecked: a simulated PostgreSQL keeps the password
// it started with; a pod presenting another one crash-loops with the
// server's refusal; a rotation Job presenting the old password succeeds and
// changes it, one presenting a wrong one fails.
func TestDatabasePasswordIsChecked(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		StringData: map[string]string{"password": "first", "wrong": "guess"}}
	if _, err := core.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	server := podSpec()
	server.Containers[0].Env = []corev1.EnvVar{{Name: "POSTGRES_PASSWORD", ValueFrom: fromSecret("db", "password")}}
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), ServiceName: "pg", Selector: &metav1.LabelSelector{MatchLabels: labels("pg")},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("pg")}, Spec: server}},
	}
	if _, err := core.AppsV1().StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "server ready", func() (bool, string) {
		s, err := core.AppsV1().StatefulSets(ns).Get(ctx, "pg", metav1.GetOptions{})
		return err == nil && s.Status.ReadyReplicas == 1, fmt.Sprint(err)
	})
	// A pod is a client whose password is checked when it starts.
	pod := func(name string, spec corev1.PodSpec) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
		if _, err := core.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var got *corev1.Pod
		eventually(t, 30*time.Second, "pod "+name+" started or refused", func() (bool, string) {
			var err error
			got, err = core.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(got.Status.ContainerStatuses) == 0 {
				return false, fmt.Sprint(err)
			}
			st := got.Status.ContainerStatuses[0].State
			return st.Running != nil || st.Terminated != nil || st.Waiting != nil && st.Waiting.Reason == nodesim.ReasonCrashLoopBackOff, fmt.Sprintf("%+v", st)
		})
		return got
	}
	refused := func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses[0]
		return cs.State.Waiting != nil && cs.State.Waiting.Reason == nodesim.ReasonCrashLoopBackOff && !cs.Ready &&
			cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.Message == `FATAL: password authentication failed for user "cnadmin"`
	}
	if p := pod("before", client("password", "")); p.Status.Phase != corev1.PodRunning {
		t.Fatalf("a client with the server's password: %+v, want running", p.Status)
	}
	// The Secret changes; the server keeps its password.
	secret.StringData = map[string]string{"password": "second", "previous-password": "first", "wrong": "guess"}
	if _, err := core.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := pod("new-before-rotation", client("password", "")); !refused(p) {
		t.Fatalf("a client with a password the server does not take: %+v, want CrashLoopBackOff with the server's refusal", p.Status.ContainerStatuses)
	}
	if p := pod("old", client("previous-password", "")); p.Status.Phase != corev1.PodRunning {
		t.Fatalf("a client with the old password: %+v, want running", p.Status)
	}
	job := func(name string, spec corev1.PodSpec, want batchv1.JobConditionType) {
		t.Helper()
		spec.RestartPolicy = corev1.RestartPolicyNever
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}, BackoffLimit: ptr.To[int32](0)}}
		if _, err := core.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "job "+name+" "+string(want), func() (bool, string) {
			j, err := core.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range j.Status.Conditions {
				if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
					return c.Type == want, fmt.Sprintf("%s: %s", c.Type, c.Message)
				}
			}
			return false, fmt.Sprintf("%+v", j.Status)
		})
	}
	// Presenting a password the server does not take, a rotation fails and
	// changes nothing; presenting the old one, it sets the new one.
	job("wrong-rotation", client("wrong", "wrong"), batchv1.JobFailed)
	if p := pod("old-after-failure", client("previous-password", "")); p.Status.Phase != corev1.PodRunning {
		t.Fatalf("the old password after a failed rotation: %+v, want running", p.Status)
	}
	job("rotation", client("previous-password", "password"), batchv1.JobComplete)
	job("rotation-again", client("previous-password", "password"), batchv1.JobComplete)
	if p := pod("new", client("password", "")); p.Status.Phase != corev1.PodRunning {
		t.Fatalf("the new password after the rotation: %+v, want running", p.Status)
	}
	if p := pod("old-after-rotation", client("previous-password", "")); !refused(p) {
		t.Fatalf("the old password after the rotation: %+v, want refused", p.Status.ContainerStatuses)
	}
	failed, err := core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=wrong-rotation"})
	if err != nil || len(failed.Items) != 1 || failed.Items[0].Status.Phase != corev1.PodFailed ||
		!strings.Contains(failed.Items[0].Status.ContainerStatuses[0].State.Terminated.Message, "password authentication failed") {
		t.Fatalf("the failed rotation's pod: %v %+v, want Failed with the server's refusal", err, failed)
	}
}
