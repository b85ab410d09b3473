package workload_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
	"github.com/validator-manager/validator-manager/impl/controller/workload/splicefacts"
	"github.com/validator-manager/validator-manager/impl/recovery"
)

// The table's types, as the tests name them.
type (
	facts         = splicefacts.Facts
	imageFacts    = splicefacts.Image
	databaseFacts = splicefacts.Database
	setting       = splicefacts.Setting
	probeFact     = splicefacts.Probe
)

func loadFacts(t *testing.T) facts {
	t.Helper()
	f, err := splicefacts.Load("testdata/splice-requirements.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Images) != 5 {
		t.Fatalf("facts name %d images, want 5", len(f.Images))
	}
	return f
}

// written are the Secret keys the controllers write for validator v1 (the
// intent controller generates the database password when the payload has
// none and writes the ledger API client secret and the onboarding secret).
var written = []string{"v1-database/password", "v1-ledger-api-auth/client-secret", "v1-onboarding/secret"}

// operatorSecrets are Secret keys the payloads reference themselves (the
// create checks that they exist).
var operatorSecrets = []string{"users/u1"}

// providerAuth is spec.config.auth as the intent controller fills it from
// the platform's identity provider when customAuth is absent.
func providerAuth() *v1alpha1.Auth {
	issuer := "http://idp.example.test/realms/validators"
	return &v1alpha1.Auth{
		Audience: "https://ledger.v1.example.test", LedgerAPIClient: "v1-validator-app", LedgerAPIUser: "service-account-v1-validator-app",
		WalletClient: "v1-wallet-ui", NameServiceClient: "v1-ans-ui", WalletUser: "0d9f4b1e-wallet-user-subject",
		JWKSURL: ptr.To(issuer + "/protocol/openid-connect/certs"), OIDCAuthorityURL: ptr.To(issuer),
		OIDCConfigURL: ptr.To(issuer + "/.well-known/openid-configuration"),
	}
}

// matrix is the payloads the facts are checked against.
func matrix() map[string]*v1alpha1.Validator {
	base := func(edit func(v *v1alpha1.Validator)) *v1alpha1.Validator {
		v := sample("v1")
		v.Spec.CustomAuth = false
		v.Spec.Config.CustomAuth = nil
		v.Spec.Config.Auth = providerAuth()
		v.Spec.Database = nil
		edit(v)
		return v
	}
	return map[string]*v1alpha1.Validator{
		"provider auth, internal database": base(func(*v1alpha1.Validator) {}),
		"custom auth": base(func(v *v1alpha1.Validator) {
			v.Spec.CustomAuth = true
			v.Spec.Config.Auth = sample("v1").Spec.Config.Auth
			v.Spec.Config.Auth.WalletUser = "operator-wallet-user"
			v.Spec.Config.Auth.OIDCAuthorityURL = ptr.To("https://idp.example.test")
			v.Spec.Config.Auth.OIDCConfigURL = ptr.To("https://idp.example.test/.well-known/openid-configuration")
			v.Spec.Database = &v1alpha1.DatabaseRef{User: "cnadmin"}
			v.Spec.Config.Database = &v1alpha1.Database{Username: ptr.To("cnadmin")}
		}),
		"external database": base(func(v *v1alpha1.Validator) {
			v.Spec.ExternalDatabase = true
			v.Spec.Config.Database = &v1alpha1.Database{External: ptr.To(true), Hostname: ptr.To("db.example.test"), Port: ptr.To("6432"), Username: ptr.To("operator")}
			v.Spec.Database = &v1alpha1.DatabaseRef{User: "operator"}
		}),
		"wallet disabled": base(func(v *v1alpha1.Validator) { v.Spec.Config.Cluster.DisabledWallet = ptr.To(true) }),
		"probes disabled": base(func(v *v1alpha1.Validator) { v.Spec.Config.Cluster.DisableProbes = ptr.To(true) }),
		"migrating": base(func(v *v1alpha1.Validator) {
			v.Spec.Migration = v1alpha1.MigrationSpec{ID: 4, Migrating: true}
			v.Spec.Config.Cluster.Migration = v1alpha1.Migration{ID: 4, Migrating: ptr.To(true)}
		}),
		"no secrets in spec yet": base(func(v *v1alpha1.Validator) { v.Spec.Secrets = nil; v.Spec.Config.Cluster.SVSponsorAddress = "" }),
	}
}

// TestSpliceRequirements checks every row of the facts table against
// Desired over the matrix.
func TestSpliceRequirements(t *testing.T) {
	f := loadFacts(t)
	for name, v := range matrix() {
		t.Run(name, func(t *testing.T) {
			objs := workload.Desired(v)
			pods := podsOf(objs)
			for _, img := range f.Images {
				pod, ok := pods[img.Workload]
				if !ok {
					if !absentByDesign(v, img.Workload) {
						t.Errorf("%s: no workload", img.Workload)
					}
					continue
				}
				c := pod.spec.Containers[0]
				checkImage(t, v, img, c)
				checkUser(t, img, pod.spec)
				checkPorts(t, img, c)
				checkProbes(t, v, img, c)
				for _, r := range img.Required {
					if val, ok := resolve(c, r.Env); !ok || (val == "" && !r.MayBeEmpty) {
						t.Errorf("%s: required %s is %q (set: %t)", img.Workload, r.Env, val, ok)
					}
				}
				checkSecretRefs(t, img.Workload, pod.spec)
				checkDatabase(t, v, img, pod.spec, pods, objs)
				checkMounts(t, img, c, pod, objs)
			}
		})
	}
}

type podOf struct {
	spec      corev1.PodSpec
	templates []corev1.PersistentVolumeClaim
}

func podsOf(objs []client.Object) map[string]podOf {
	out := map[string]podOf{}
	for _, o := range objs {
		component := o.GetLabels()[workload.ComponentLabel]
		switch w := o.(type) {
		case *appsv1.Deployment:
			out[component] = podOf{spec: w.Spec.Template.Spec}
		case *appsv1.StatefulSet:
			out[component] = podOf{spec: w.Spec.Template.Spec, templates: w.Spec.VolumeClaimTemplates}
		}
	}
	return out
}

func absentByDesign(v *v1alpha1.Validator, component string) bool {
	switch component {
	case workload.WalletUI, workload.ANSUI:
		return ptr.Deref(v.Spec.Config.Cluster.DisabledWallet, false)
	case workload.Postgres:
		return v.Spec.ExternalDatabase
	}
	return false
}

func checkImage(t *testing.T, v *v1alpha1.Validator, img imageFacts, c corev1.Container) {
	t.Helper()
	for _, ref := range []string{c.Image} {
		if err := apitest.ParseImageReference(ref); err != nil {
			t.Errorf("%s: %v", img.Workload, err)
		}
	}
	if img.Image == workload.Postgres {
		return
	}
	if want := v.Spec.Config.ImageRepo + "/" + img.Image + ":" + v.Spec.Config.ImageTag; c.Image != want {
		t.Errorf("%s: image %q, want %q", img.Workload, c.Image, want)
	}
}

func checkUser(t *testing.T, img imageFacts, spec corev1.PodSpec) {
	t.Helper()
	var got *int64
	if spec.SecurityContext != nil {
		got = spec.SecurityContext.RunAsUser
	}
	for _, c := range spec.Containers {
		if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
			got = c.SecurityContext.RunAsUser
		}
	}
	switch {
	case img.User.ImageUser && got != nil:
		t.Errorf("%s: runs as %d, want the image's own user", img.Workload, *got)
	case img.User.ImageUser && spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil:
		// The image's user is a name: the kubelet cannot verify it is not root.
		t.Errorf("%s: runAsNonRoot with a non-numeric image user", img.Workload)
	case img.User.RunAsUser != nil && (got == nil || *got != *img.User.RunAsUser):
		t.Errorf("%s: runs as %v, want %d", img.Workload, got, *img.User.RunAsUser)
	}
}

func checkPorts(t *testing.T, img imageFacts, c corev1.Container) {
	t.Helper()
	for _, p := range img.Ports {
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.Name && cp.ContainerPort == p.Port }) {
			t.Errorf("%s: no port %s %d in %v", img.Workload, p.Name, p.Port, c.Ports)
		}
	}
}

func checkProbes(t *testing.T, v *v1alpha1.Validator, img imageFacts, c corev1.Container) {
	t.Helper()
	if img.Probes == nil || ptr.Deref(v.Spec.Config.Cluster.DisableProbes, false) {
		if c.LivenessProbe != nil || c.ReadinessProbe != nil {
			t.Errorf("%s: probes %v %v, want none", img.Workload, c.LivenessProbe, c.ReadinessProbe)
		}
		return
	}
	check := func(kind string, want *probeFact, got *corev1.Probe) {
		switch {
		case want == nil && got == nil:
		case want == nil || got == nil:
			t.Errorf("%s: %s probe %v, want %+v", img.Workload, kind, got, want)
		case want.GRPC != 0 && (got.GRPC == nil || got.GRPC.Port != want.GRPC || ptr.Deref(got.GRPC.Service, "") != want.Service):
			t.Errorf("%s: %s probe %+v, want grpc %d %q", img.Workload, kind, got.ProbeHandler, want.GRPC, want.Service)
		case want.HTTPPath != "" && (got.HTTPGet == nil || got.HTTPGet.Path != want.HTTPPath || got.HTTPGet.Port.IntValue() != int(want.Port)):
			t.Errorf("%s: %s probe %+v, want GET %s :%d", img.Workload, kind, got.ProbeHandler, want.HTTPPath, want.Port)
		case want.Exec != "" && (got.Exec == nil || got.Exec.Command[0] != want.Exec):
			t.Errorf("%s: %s probe %+v, want exec %s", img.Workload, kind, got.ProbeHandler, want.Exec)
		}
	}
	check("liveness", &img.Probes.Liveness, c.LivenessProbe)
	check("readiness", img.Probes.Readiness, c.ReadinessProbe)
}

var resolve = splicefacts.Resolve

// checkSecretRefs: every Secret key a container (init ones too) needs is
// one the controllers write or one the payload named.
func checkSecretRefs(t *testing.T, component string, spec corev1.PodSpec) {
	t.Helper()
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || ptr.Deref(e.ValueFrom.SecretKeyRef.Optional, false) {
				continue
			}
			ref := e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			if !slices.Contains(written, ref) && !slices.Contains(operatorSecrets, ref) {
				t.Errorf("%s/%s: %s reads Secret key %s, which nothing writes", component, c.Name, e.Name, ref)
			}
		}
	}
}

// checkDatabase: the app connects to the host, port, user and password of
// the validator's database server, to the database the charts name, and an
// init container creates that database on that server as that user first.
func checkDatabase(t *testing.T, v *v1alpha1.Validator, img imageFacts, spec corev1.PodSpec, pods map[string]podOf, objs []client.Object) {
	t.Helper()
	db := img.Database
	if db == nil {
		return
	}
	c := spec.Containers[0]
	get := func(s setting) string { return s.In(c) }
	want := map[string]string{
		"host": v.Name + "-postgres", "port": "5432", "user": "postgres",
		"database": strings.ReplaceAll(db.Name, "<migrationId>", strconv.Itoa(int(v.Spec.Migration.ID))),
		"schema":   db.SchemaName, "password": "secret:v1-database/password",
	}
	if pg, ok := pods[workload.Postgres]; ok {
		pc := pg.spec.Containers[0]
		want["user"], _ = resolve(pc, "POSTGRES_USER")
		if pw, _ := resolve(pc, "POSTGRES_PASSWORD"); pw != want["password"] {
			t.Errorf("postgres password %s, want %s", pw, want["password"])
		}
	}
	if v.Spec.ExternalDatabase {
		d := v.Spec.Config.Database
		want["host"], want["port"], want["user"] = *d.Hostname, *d.Port, *d.Username
	} else if !slices.ContainsFunc(objs, func(o client.Object) bool {
		svc, ok := o.(*corev1.Service)
		return ok && svc.Name == want["host"] && svc.Spec.Selector[workload.ComponentLabel] == workload.Postgres &&
			slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == 5432 })
	}) {
		t.Errorf("no Service %s:5432 in front of the database", want["host"])
	}
	got := map[string]string{
		"host": get(db.Host), "port": get(db.Port), "user": get(db.User),
		"database": get(db.Database), "schema": get(db.Schema), "password": get(db.Password),
	}
	for k, w := range want {
		if got[k] != w || w == "" {
			t.Errorf("%s: database %s %q, want %q", img.Workload, k, got[k], w)
		}
	}
	created := false
	for _, ic := range spec.InitContainers {
		init := map[string]string{}
		for _, n := range []string{"PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "DATABASE_NAME"} {
			init[n], _ = resolve(ic, n)
		}
		if init["DATABASE_NAME"] == want["database"] && init["PGHOST"] == want["host"] && init["PGPORT"] == want["port"] &&
			init["PGUSER"] == want["user"] && init["PGPASSWORD"] == want["password"] && strings.Contains(strings.Join(ic.Command, " "), "CREATE DATABASE") {
			created = true
			if err := apitest.ParseImageReference(ic.Image); err != nil {
				t.Errorf("%s/%s: %v", img.Workload, ic.Name, err)
			}
		}
	}
	if !created {
		t.Errorf("%s: no init container creates database %s as %s on %s:%s (%+v)", img.Workload, want["database"], want["user"], want["host"], want["port"], spec.InitContainers)
	}
}

// checkMounts: every mount the image needs is there, backed by a claim the
// controller writes, and the paths the variables name lie on it.
func checkMounts(t *testing.T, img imageFacts, c corev1.Container, p podOf, objs []client.Object) {
	t.Helper()
	for _, m := range img.Mounts {
		i := slices.IndexFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.MountPath == m.Path })
		if i < 0 {
			if slices.ContainsFunc(m.Holds, func(n string) bool { return env(c, n) != nil }) {
				t.Errorf("%s: nothing mounted at %s", img.Workload, m.Path)
			}
			continue
		}
		vol := c.VolumeMounts[i].Name
		switch {
		case m.ClaimTemplate:
			if !slices.ContainsFunc(p.templates, func(pvc corev1.PersistentVolumeClaim) bool { return pvc.Name == vol }) {
				t.Errorf("%s: %s is not a claim template", img.Workload, vol)
			}
		case m.Claim:
			j := slices.IndexFunc(p.spec.Volumes, func(v corev1.Volume) bool { return v.Name == vol })
			if j < 0 || p.spec.Volumes[j].PersistentVolumeClaim == nil || !hasClaim(objs, p.spec.Volumes[j].PersistentVolumeClaim.ClaimName) {
				t.Errorf("%s: volume %s at %s is not a claim the controller writes", img.Workload, vol, m.Path)
			}
		}
		for _, n := range m.Holds {
			if e := env(c, n); e != nil && !strings.Contains(e.Value, `"`+m.Path+"/") {
				t.Errorf("%s: %s = %q, not under %s", img.Workload, n, e.Value, m.Path)
			}
		}
	}
}

func hasClaim(objs []client.Object, name string) bool {
	return slices.ContainsFunc(objs, func(o client.Object) bool {
		_, ok := o.(*corev1.PersistentVolumeClaim)
		return ok && o.GetName() == name
	})
}

// The recovery procedure copies the dump to a path on the dump volume.
func TestRecoveryDumpOnVolume(t *testing.T) {
	v := sample("v1")
	c := deployment(t, v, workload.ValidatorApp).Spec.Template.Spec.Containers[0]
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return strings.HasPrefix(recovery.DumpPath, m.MountPath+"/")
	}) {
		t.Fatalf("recovery copies to %s; mounts %v", recovery.DumpPath, c.VolumeMounts)
	}
	var claim *corev1.PersistentVolumeClaim
	for _, o := range workload.Desired(v) {
		if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok {
			claim = pvc
		}
	}
	if claim == nil || claim.Name != workload.MigrationDumpClaimName("v1") || claim.Name != "v1-domain-upgrade-dump" ||
		len(claim.OwnerReferences) != 0 || ptr.Deref(claim.Spec.StorageClassName, "") != "fast" {
		t.Fatalf("dump claim %+v, want v1-domain-upgrade-dump without owner, class fast", claim)
	}
	// A super validator's validator has no dump volume, as in the chart.
	v.Spec.Config.Cluster.SVValidator = ptr.To(true)
	for _, o := range workload.Desired(v) {
		if _, ok := o.(*corev1.PersistentVolumeClaim); ok {
			t.Fatal("a super validator's validator got a dump claim")
		}
	}
}
