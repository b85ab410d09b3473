package workload_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// sample is a validator as the API writes one: custom auth, a sponsor,
// resources and an image pull secret for the participant, its Secrets.
func sample(name string) *v1alpha1.Validator {
	return &v1alpha1.Validator{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "uid-1", Generation: 1},
		Spec: v1alpha1.ValidatorSpec{
			Config: v1alpha1.ValidatorConfig{
				Version: v1alpha1.ValidatorConfigVersion, Name: name, ImageRepo: "ghcr.io/example/docker", ImageTag: "0.5.1",
				Auth: &v1alpha1.Auth{Audience: "https://ledger.example.test", LedgerAPIUser: "ledger-user", LedgerAPIClient: "ledger-client",
					WalletClient: "wallet-client", NameServiceClient: "ans-client", JWKSURL: ptr.To("https://idp.example.test/jwks")},
				Cluster: v1alpha1.Cluster{
					ScanAddress: "http://scan.example.test", SVSponsorAddress: "http://sv.example.test", PartyHint: "acme-validator-1",
					DefaultJVMOptions: "-Xmx2g",
					ValidatorApp:      v1alpha1.App{EnvVars: []corev1.EnvVar{{Name: "EXTRA", Value: "1"}}},
					AdditionalUsersEnvVars: &[]corev1.EnvVar{{Name: "USER_SECRET", ValueFrom: &corev1.EnvVarSource{
						SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "users"}, Key: "u1"}}}},
				},
				Participant: v1alpha1.App{
					EnvVars: []corev1.EnvVar{{Name: "P_VAR", Value: "p"}},
					Workload: v1alpha1.Workload{
						Resources: &corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
						},
						ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}, Replicas: ptr.To[int32](1),
					},
				},
			},
			CustomAuth:      true,
			DatabaseStorage: "20Gi",
			StorageClass:    "fast",
			Migration:       v1alpha1.MigrationSpec{ID: 3},
			Secrets: &v1alpha1.ValidatorSecretRefs{
				Onboarding:    &v1alpha1.SecretKeyRef{Name: name + "-onboarding", Key: "secret"},
				LedgerAPIAuth: &v1alpha1.SecretKeyRef{Name: name + "-ledger-api-auth", Key: "client-secret"},
				Database:      &v1alpha1.SecretKeyRef{Name: name + "-database", Key: "password"},
			},
		},
	}
}

func names(objs []client.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, typeName(o)+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

func typeName(o client.Object) string {
	switch o.(type) {
	case *appsv1.Deployment:
		return "Deployment"
	case *appsv1.StatefulSet:
		return "StatefulSet"
	case *corev1.Service:
		return "Service"
	case *corev1.PersistentVolumeClaim:
		return "PersistentVolumeClaim"
	}
	return "?"
}

func TestDesiredLayout(t *testing.T) {
	full := []string{
		"Deployment/v1-ans-web-ui", "Deployment/v1-participant", "Deployment/v1-validator-app", "Deployment/v1-wallet-web-ui",
		"PersistentVolumeClaim/v1-domain-upgrade-dump",
		"Service/v1-ans-web-ui", "Service/v1-participant", "Service/v1-postgres", "Service/v1-validator-app", "Service/v1-wallet-web-ui",
		"StatefulSet/v1-postgres",
	}
	tests := []struct {
		name string
		edit func(*v1alpha1.Validator)
		want []string
	}{
		{"full layout", func(*v1alpha1.Validator) {}, full},
		{"wallet disabled", func(v *v1alpha1.Validator) { v.Spec.Config.Cluster.DisabledWallet = ptr.To(true) },
			[]string{"Deployment/v1-participant", "Deployment/v1-validator-app", "PersistentVolumeClaim/v1-domain-upgrade-dump",
				"Service/v1-participant", "Service/v1-postgres", "Service/v1-validator-app", "StatefulSet/v1-postgres"}},
		{"external database", func(v *v1alpha1.Validator) { v.Spec.ExternalDatabase = true },
			[]string{"Deployment/v1-ans-web-ui", "Deployment/v1-participant", "Deployment/v1-validator-app", "Deployment/v1-wallet-web-ui",
				"PersistentVolumeClaim/v1-domain-upgrade-dump",
				"Service/v1-ans-web-ui", "Service/v1-participant", "Service/v1-validator-app", "Service/v1-wallet-web-ui"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := sample("v1")
			tc.edit(v)
			objs := workload.Desired(v)
			if got := names(objs); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			for _, o := range objs {
				if _, kept := o.(*corev1.PersistentVolumeClaim); kept {
					continue // the dump claim outlives the validator (TestRecoveryDumpOnVolume)
				}
				ref := metav1.GetControllerOf(o)
				if ref == nil || ref.UID != v.UID || ref.Kind != "Validator" || ref.APIVersion != "validator-manager.io/v1alpha1" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
					t.Errorf("%s: owner %+v, want the Validator as controller", o.GetName(), ref)
				}
				if o.GetNamespace() != "ns" || o.GetLabels()[workload.ValidatorLabel] != "v1" || o.GetLabels()[workload.ManagedByLabel] != workload.ManagedBy {
					t.Errorf("%s: namespace %q labels %v", o.GetName(), o.GetNamespace(), o.GetLabels())
				}
			}
		})
	}
}

// The Services answer at the addresses release 1.11 shows and the backup
// Job dials.
func TestDesiredServicesMatchAddresses(t *testing.T) {
	v := sample("v1")
	svc := map[string]*corev1.Service{}
	for _, o := range workload.Desired(v) {
		if s, ok := o.(*corev1.Service); ok {
			svc[s.Name] = s
		}
	}
	host := func(name string) string { return name + ".ns.svc.cluster.local" }
	checks := []struct {
		address string
		service string
		port    int32
	}{
		{domain.LedgerAPIAddress("v1", "ns"), "v1-participant", domain.LedgerAPIPort},
		{strings.TrimPrefix(domain.JSONAPIURL("v1", "ns"), "http://"), "v1-participant", domain.JSONAPIPort},
		{strings.TrimPrefix(domain.ValidatorAppURL("v1", "ns"), "http://"), "v1-validator-app", domain.ValidatorAppPort},
		{domain.ServiceHost("v1", domain.ServiceWalletUI, "ns") + ":80", "v1-wallet-web-ui", 80},
		{domain.ServiceHost("v1", domain.ServiceANSUI, "ns") + ":80", "v1-ans-web-ui", 80},
		{cluster.DatabaseHost("v1") + ".ns.svc.cluster.local:5432", "v1-postgres", 5432},
	}
	for _, c := range checks {
		s := svc[c.service]
		if s == nil {
			t.Errorf("%s: no Service %s", c.address, c.service)
			continue
		}
		want := host(c.service) + ":" + itoa(c.port)
		if c.address != want {
			t.Errorf("address %s, want %s", c.address, want)
		}
		if !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == c.port }) {
			t.Errorf("Service %s: ports %v, want %d", c.service, s.Spec.Ports, c.port)
		}
	}
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

func deployment(t *testing.T, v *v1alpha1.Validator, component string) *appsv1.Deployment {
	t.Helper()
	for _, o := range workload.Desired(v) {
		if d, ok := o.(*appsv1.Deployment); ok && d.Name == workload.Name(v.Name, component) {
			return d
		}
	}
	t.Fatalf("no Deployment %s", component)
	return nil
}

func statefulSet(t *testing.T, v *v1alpha1.Validator) *appsv1.StatefulSet {
	t.Helper()
	for _, o := range workload.Desired(v) {
		if s, ok := o.(*appsv1.StatefulSet); ok {
			return s
		}
	}
	t.Fatalf("no StatefulSet")
	return nil
}

func env(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func TestDesiredContainers(t *testing.T) {
	v := sample("v1")
	tests := []struct {
		component string
		image     string
		env       map[string]string // value, or "secret:<name>/<key>"
	}{
		{workload.Participant, "ghcr.io/example/docker/canton-participant:0.5.1", map[string]string{
			"CANTON_PARTICIPANT_POSTGRES_SERVER":   "v1-postgres",
			"CANTON_PARTICIPANT_POSTGRES_PASSWORD": "secret:v1-database/password",
			"CANTON_PARTICIPANT_ADMIN_USER_NAME":   "ledger-user",
			"AUTH_JWKS_URL":                        "https://idp.example.test/jwks",
			"AUTH_TARGET_AUDIENCE":                 "https://ledger.example.test",
			"JAVA_TOOL_OPTIONS":                    "-Xmx2g",
			"P_VAR":                                "p",
		}},
		{workload.ValidatorApp, "ghcr.io/example/docker/validator-app:0.5.1", map[string]string{
			"SPLICE_APP_VALIDATOR_SCAN_ADDRESS":                  "http://scan.example.test",
			"SPLICE_APP_VALIDATOR_SV_SPONSOR_ADDRESS":            "http://sv.example.test",
			"SPLICE_APP_VALIDATOR_ONBOARDING_SECRET":             "secret:v1-onboarding/secret",
			"SPLICE_APP_VALIDATOR_PARTY_HINT":                    "acme-validator-1",
			"SPLICE_APP_VALIDATOR_PARTICIPANT_ADDRESS":           "v1-participant",
			"SPLICE_APP_VALIDATOR_LEDGER_API_AUTH_CLIENT_SECRET": "secret:v1-ledger-api-auth/client-secret",
			"SPLICE_APP_VALIDATOR_LEDGER_API_AUTH_CLIENT_ID":     "ledger-client",
			"SPLICE_APP_POSTGRES_PASSWORD":                       "secret:v1-database/password",
			"ADDITIONAL_CONFIG_MIGRATION_ID":                     "canton.validator-apps.validator_backend {\n  domain-migration-id = 3\n}\n",
			"ADDITIONAL_CONFIG_ENABLE_WALLET":                    "canton.validator-apps.validator_backend.enable-wallet = \"true\"\n",
			"USER_SECRET":                                        "secret:users/u1",
			"EXTRA":                                              "1",
		}},
		{workload.WalletUI, "ghcr.io/example/docker/wallet-web-ui:0.5.1", map[string]string{"SPLICE_APP_UI_AUTH_CLIENT_ID": "wallet-client"}},
		{workload.ANSUI, "ghcr.io/example/docker/ans-web-ui:0.5.1", map[string]string{"SPLICE_APP_UI_AUTH_CLIENT_ID": "ans-client"}},
	}
	for _, tc := range tests {
		t.Run(tc.component, func(t *testing.T) {
			d := deployment(t, v, tc.component)
			c := d.Spec.Template.Spec.Containers[0]
			if c.Image != tc.image {
				t.Errorf("image %q, want %q", c.Image, tc.image)
			}
			for name, want := range tc.env {
				e := env(c, name)
				got := "<absent>"
				switch {
				case e != nil && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
					got = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
				case e != nil:
					got = e.Value
				}
				if got != want {
					t.Errorf("env %s = %q, want %q", name, got, want)
				}
			}
			// The charts probe the participant and the validator app, not the UIs.
			wantProbes := tc.component == workload.Participant || tc.component == workload.ValidatorApp
			if (c.LivenessProbe != nil) != wantProbes || (c.ReadinessProbe != nil) != wantProbes {
				t.Errorf("probes %v %v, want probes: %t", c.LivenessProbe, c.ReadinessProbe, wantProbes)
			}
			if got := d.Spec.Selector.MatchLabels; got[workload.ComponentLabel] != tc.component || got[workload.ValidatorLabel] != "v1" {
				t.Errorf("selector %v", got)
			}
		})
	}
	// Participant resources, pull secret and replicas come from the configuration.
	p := deployment(t, v, workload.Participant)
	res := p.Spec.Template.Spec.Containers[0].Resources
	if res.Requests.Cpu().String() != "500m" || res.Limits.Cpu().String() != "2" || res.Requests.Memory().String() != "2Gi" || res.Limits.Memory().String() != "4Gi" {
		t.Errorf("participant resources %v", res)
	}
	if ps := p.Spec.Template.Spec.ImagePullSecrets; len(ps) != 1 || ps[0].Name != "regcred" {
		t.Errorf("image pull secrets %v, want regcred", ps)
	}
	if *p.Spec.Replicas != 1 {
		t.Errorf("replicas %d", *p.Spec.Replicas)
	}
	// The probes as the charts define them.
	if g := p.Spec.Template.Spec.Containers[0].ReadinessProbe.GRPC; g == nil || g.Port != 5061 {
		t.Errorf("participant readiness %+v, want grpc :5061", g)
	}
	app := deployment(t, v, workload.ValidatorApp).Spec.Template.Spec.Containers[0]
	if h := app.ReadinessProbe.HTTPGet; h == nil || h.Path != "/api/validator/readyz" || h.Port.IntValue() != 5003 {
		t.Errorf("validator app readiness %+v", h)
	}
}

func TestDesiredDatabase(t *testing.T) {
	v := sample("v1")
	st := statefulSet(t, v)
	claim := st.Spec.VolumeClaimTemplates[0]
	if got := claim.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "20Gi" {
		t.Errorf("storage %s, want 20Gi", got.String())
	}
	if ptr.Deref(claim.Spec.StorageClassName, "") != "fast" {
		t.Errorf("storage class %v, want fast", claim.Spec.StorageClassName)
	}
	c := st.Spec.Template.Spec.Containers[0]
	if c.Image != "postgres:14" || env(c, "POSTGRES_USER").Value != "postgres" || env(c, "POSTGRES_PASSWORD").ValueFrom.SecretKeyRef.Name != "v1-database" {
		t.Errorf("postgres container %+v", c)
	}
	if st.Spec.ServiceName != "v1-postgres" {
		t.Errorf("serviceName %q", st.Spec.ServiceName)
	}

	v.Spec.DatabaseStorage, v.Spec.StorageClass = "", ""
	claim = statefulSet(t, v).Spec.VolumeClaimTemplates[0]
	if got := claim.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "10Gi" || claim.Spec.StorageClassName != nil {
		t.Errorf("default storage %s class %v, want 10Gi and the cluster's default", got.String(), claim.Spec.StorageClassName)
	}
}

func TestDesiredOptions(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*v1alpha1.Validator)
		check func(t *testing.T, v *v1alpha1.Validator)
	}{
		{"disableProbes removes every probe", func(v *v1alpha1.Validator) { v.Spec.Config.Cluster.DisableProbes = ptr.To(true) },
			func(t *testing.T, v *v1alpha1.Validator) {
				for _, o := range workload.Desired(v) {
					var pod corev1.PodSpec
					switch w := o.(type) {
					case *appsv1.Deployment:
						pod = w.Spec.Template.Spec
					case *appsv1.StatefulSet:
						pod = w.Spec.Template.Spec
					default:
						continue
					}
					for _, c := range pod.Containers {
						if c.LivenessProbe != nil || c.ReadinessProbe != nil {
							t.Errorf("%s/%s has probes", o.GetName(), c.Name)
						}
					}
				}
			}},
		{"no onboarding secret: DevNet onboarding, as the chart", func(v *v1alpha1.Validator) { v.Spec.Secrets.Onboarding = nil },
			func(t *testing.T, v *v1alpha1.Validator) {
				c := deployment(t, v, workload.ValidatorApp).Spec.Template.Spec.Containers[0]
				if e := env(c, "SPLICE_APP_DEVNET"); e == nil || e.Value != "1" || env(c, "SPLICE_APP_VALIDATOR_ONBOARDING_SECRET") != nil {
					t.Errorf("env %v", c.Env)
				}
			}},
		{"no sponsor: no onboarding", func(v *v1alpha1.Validator) { v.Spec.Config.Cluster.SVSponsorAddress = "" },
			func(t *testing.T, v *v1alpha1.Validator) {
				c := deployment(t, v, workload.ValidatorApp).Spec.Template.Spec.Containers[0]
				if env(c, "ADDITIONAL_CONFIG_NO_ONBOARDING") == nil || env(c, "SPLICE_APP_VALIDATOR_ONBOARDING_SECRET") != nil {
					t.Errorf("env %v", c.Env)
				}
			}},
		{"migrating restores from the dump", func(v *v1alpha1.Validator) { v.Spec.Migration = v1alpha1.MigrationSpec{ID: 4, Migrating: true} },
			func(t *testing.T, v *v1alpha1.Validator) {
				d := deployment(t, v, workload.ValidatorApp)
				c := d.Spec.Template.Spec.Containers[0]
				if env(c, "ADDITIONAL_CONFIG_VALIDATOR_MIGRATION_RESTORE") == nil || !strings.Contains(env(c, "ADDITIONAL_CONFIG_MIGRATION_ID").Value, "= 4") {
					t.Errorf("env %v", c.Env)
				}
				if d.Labels[workload.MigrationLabel] != "4" {
					t.Errorf("labels %v", d.Labels)
				}
				// A new migration id starts a new participant database.
				p := deployment(t, v, workload.Participant).Spec.Template.Spec
				if env(p.Containers[0], "CANTON_PARTICIPANT_POSTGRES_DB").Value != "participant_4" || env(p.InitContainers[0], "DATABASE_NAME").Value != "participant_4" {
					t.Errorf("participant database %v, init %v", p.Containers[0].Env, p.InitContainers)
				}
			}},
		{"walletUserName overrides auth.walletUser", func(v *v1alpha1.Validator) {
			v.Spec.Config.Auth.WalletUser = "from-auth"
			v.Spec.Config.Cluster.WalletUserName = ptr.To("from-cluster-config")
		}, func(t *testing.T, v *v1alpha1.Validator) {
			c := deployment(t, v, workload.ValidatorApp).Spec.Template.Spec.Containers[0]
			if got := env(c, "SPLICE_APP_VALIDATOR_WALLET_USER_NAME").Value; got != "from-cluster-config" {
				t.Errorf("wallet user %q", got)
			}
			v.Spec.Config.Cluster.WalletUserName = nil
			c = deployment(t, v, workload.ValidatorApp).Spec.Template.Spec.Containers[0]
			if got := env(c, "SPLICE_APP_VALIDATOR_WALLET_USER_NAME").Value; got != "from-auth" {
				t.Errorf("wallet user %q, want auth.walletUser", got)
			}
		}},
		{"external database: the apps dial it", func(v *v1alpha1.Validator) {
			v.Spec.ExternalDatabase = true
			v.Spec.Config.Database = &v1alpha1.Database{External: ptr.To(true), Hostname: ptr.To("db.example.test"), Port: ptr.To("6432")}
		}, func(t *testing.T, v *v1alpha1.Validator) {
			c := deployment(t, v, workload.Participant).Spec.Template.Spec.Containers[0]
			if env(c, "CANTON_PARTICIPANT_POSTGRES_SERVER").Value != "db.example.test" || env(c, "CANTON_PARTICIPANT_POSTGRES_PORT").Value != "6432" {
				t.Errorf("env %v", c.Env)
			}
		}},
		{"wallet disabled tells the validator app", func(v *v1alpha1.Validator) { v.Spec.Config.Cluster.DisabledWallet = ptr.To(true) },
			func(t *testing.T, v *v1alpha1.Validator) {
				c := deployment(t, v, workload.ValidatorApp).Spec.Template.Spec.Containers[0]
				if !strings.Contains(env(c, "ADDITIONAL_CONFIG_ENABLE_WALLET").Value, `"false"`) {
					t.Errorf("env %v", c.Env)
				}
			}},
		{"an env var of the configuration replaces the chart's", func(v *v1alpha1.Validator) {
			v.Spec.Config.Cluster.ValidatorApp.EnvVars = []corev1.EnvVar{{Name: "SPLICE_APP_CONTACT_POINT", Value: "ops@example.test"}}
		}, func(t *testing.T, v *v1alpha1.Validator) {
			c := deployment(t, v, workload.ValidatorApp).Spec.Template.Spec.Containers[0]
			n := 0
			for _, e := range c.Env {
				if e.Name == "SPLICE_APP_CONTACT_POINT" {
					n++
				}
			}
			if n != 1 || env(c, "SPLICE_APP_CONTACT_POINT").Value != "ops@example.test" {
				t.Errorf("env %v", c.Env)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := sample("v1")
			tc.edit(v)
			tc.check(t, v)
		})
	}
}
