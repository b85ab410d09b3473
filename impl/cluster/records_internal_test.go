package cluster

import (
	"fmt"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestRecordSecret: a Secret's record keeps its key, owners, validator and
// the keys of data and stringData, sorted and once each, never a value or
// another label or annotation; a record passes through unchanged.
func TestRecordSecret(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "validator-manager.io/v1alpha1", Kind: "Validator", Name: "v1", UID: "u1"}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "v1-database", Namespace: "ns", UID: "s1", ResourceVersion: "7",
			Labels:          map[string]string{ValidatorLabel: "v1", "other": "x"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"c2VjcmV0"}}`},
			OwnerReferences: []metav1.OwnerReference{owner}},
		Data:       map[string][]byte{"password": []byte("secret"), "user": []byte("u")},
		StringData: map[string]string{"password": "secret", "extra": "e"},
	}
	out, err := recordSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := out.(*SecretRecord)
	if !ok {
		t.Fatalf("got %T, want *SecretRecord", out)
	}
	if r.Name != "v1-database" || r.Namespace != "ns" || r.UID != "s1" || r.ResourceVersion != "7" || r.Validator != "v1" ||
		!slices.Equal(r.Keys, []string{"extra", "password", "user"}) || len(r.OwnerReferences) != 1 || r.OwnerReferences[0] != owner ||
		len(r.GetAnnotations()) != 0 {
		t.Fatalf("record: got %+v", r)
	}
	for key, want := range map[string]bool{"password": true, "user": true, "extra": true, "pass": false, "": false} {
		if got := r.Has(key); got != want {
			t.Errorf("Has(%q): got %v, want %v", key, got, want)
		}
	}
	if l := r.GetLabels(); len(l) != 1 || l[ValidatorLabel] != "v1" {
		t.Errorf("GetLabels: got %v, want the validator's label alone", l)
	}
	if again, _ := recordSecret(r); again != r {
		t.Errorf("a record passed again: got %p, want the same %p", again, r)
	}
}

// TestRecordCronJob: a CronJob's record keeps its key, labels and owners
// and the digest of its spec: equal for equal specs, another for a
// changed schedule.
func TestRecordCronJob(t *testing.T) {
	cj := backupCronJob(backupTarget{namespace: "ns", validator: "v1", uid: "u1", cron: "0 3 * * *", maxBackups: 2, databaseUser: "u"})
	cj.ResourceVersion = "9"
	digest := func(cj *batchv1.CronJob) string {
		t.Helper()
		out, err := recordCronJob(cj)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := out.(*CronJobRecord)
		if !ok {
			t.Fatalf("got %T, want *CronJobRecord", out)
		}
		if r.Name != cj.Name || r.ResourceVersion != "9" || r.Labels[ValidatorLabel] != "v1" || len(r.OwnerReferences) != 1 || len(r.GetAnnotations()) != 0 {
			t.Fatalf("record: got %+v", r)
		}
		if again, _ := recordCronJob(r); again != r {
			t.Errorf("a record passed again: got %p, want the same %p", again, r)
		}
		return r.Digest
	}
	first := digest(cj)
	want, err := cronJobDigest(cj.Spec)
	if err != nil || first != want {
		t.Fatalf("digest: got %q, want cronJobDigest's %q (%v)", first, want, err)
	}
	changed := cj.DeepCopy()
	changed.Spec.Schedule = "0 4 * * *"
	if digest(changed) == first {
		t.Error("a changed schedule kept the digest")
	}
}

// TestRecords: the gateway's records follow the informer's handler calls
// for its namespace alone, deletions included (a final state unknown too),
// and each change is told (changed) once get shows it.
func TestRecords(t *testing.T) {
	rec := func(ns, name, rv string) *SecretRecord {
		r := &SecretRecord{}
		r.Namespace, r.Name, r.ResourceVersion = ns, name, rv
		return r
	}
	var r *records[*SecretRecord]
	var told []string
	r = newRecords("ns", func(s *SecretRecord) {
		cur, ok := r.get(s.Name)
		told = append(told, fmt.Sprintf("%s %v", s.Name, ok && cur == s))
	})
	steps := []struct {
		name string
		do   func()
		want map[string]string // name → resourceVersion
		told []string          // name, and whether get shows that record
	}{
		{"added", func() { r.put(rec("ns", "a", "1")); r.put(rec("ns", "b", "2")) }, map[string]string{"a": "1", "b": "2"}, []string{"a true", "b true"}},
		{"another namespace", func() { r.put(rec("other", "c", "3")) }, map[string]string{"a": "1", "b": "2"}, nil},
		{"updated", func() { r.put(rec("ns", "a", "4")) }, map[string]string{"a": "4", "b": "2"}, []string{"a true"}},
		{"deleted", func() { r.remove(rec("ns", "a", "4")) }, map[string]string{"b": "2"}, []string{"a false"}},
		{"deleted, final state unknown", func() {
			r.remove(toolscache.DeletedFinalStateUnknown{Key: "ns/b", Obj: rec("ns", "b", "2")})
		}, map[string]string{}, []string{"b false"}},
		{"another kind", func() { r.put(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}}) }, map[string]string{}, nil},
	}
	for _, st := range steps {
		told = nil
		st.do()
		if !slices.Equal(told, st.told) {
			t.Errorf("%s: told %q, want %q", st.name, told, st.told)
		}
		for _, name := range []string{"a", "b", "c", "d"} {
			got, ok := r.get(name)
			want, wantOK := st.want[name]
			if ok != wantOK || ok && got.ResourceVersion != want {
				t.Errorf("%s: get(%q): got %v %v, want %q %v", st.name, name, got, ok, want, wantOK)
			}
		}
	}
}
