// Package workload is the controller that turns each Validator resource into
// a Splice validator's workloads, as its Renderer lays them out (BuiltIn, or
// Splice's charts in chart mode), and reports their readiness in its status.
package workload

import (
	"cmp"
	"maps"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// Components of a validator: each is a workload and a Service named
// <validator>-<component>, which release 1.11's addresses and the backup Job use.
const (
	Participant  = domain.ServiceParticipant
	ValidatorApp = domain.ServiceValidatorApp
	WalletUI     = domain.ServiceWalletUI
	ANSUI        = domain.ServiceANSUI
	Postgres     = "postgres"
)

// Labels of every object the controller writes. ComponentLabel with
// ValidatorLabel selects a component's pods (as the recovery command does).
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "validator-manager"
	ValidatorLabel = cluster.ValidatorLabel
	// ValidatorNamespaceLabel names the Validator's namespace.
	ValidatorNamespaceLabel = cluster.ValidatorNamespaceLabel
	ComponentLabel          = "app.kubernetes.io/component"
	// MigrationLabel is the charts' label of the synchronizer migration id.
	MigrationLabel = "migration"
)

// Defaults where the Validator says nothing, from the charts' values.
const (
	defaultDatabaseStorage = "10Gi" // docs/decisions.md: the internal database starts with 10Gi
	defaultDatabaseUser    = "postgres"
	defaultDatabasePort    = "5432"
	databasePasswordKey    = "password"
	ledgerAPIAuthSecretKey = "client-secret"
	postgresImage          = "postgres:14" // splice-postgres
	postgresDataVolume     = "pg-data"     // splice-postgres db.pvcTemplateName
	postgresDataDir        = "/var/lib/postgresql/data"
	uiPort                 = 8080
	metricsPort            = 10013
	participantProbePort   = 5061
	identitiesDumpVolume   = "participant-bootstrapping-dump-volume"
	identitiesDumpPath     = "/participant-bootstrapping-dump"
	// The validator app's migration dump volume (migration.attachPvc).
	migrationDumpVolume  = "domain-upgrade-dump-volume"
	migrationDumpDir     = "/domain-upgrade-dump"
	migrationDumpFile    = migrationDumpDir + "/domain_migration_dump.json"
	migrationDumpStorage = "10G" // the chart's size
	migrationDumpClaim   = "domain-upgrade-dump"
)

// Name is the name of a validator's workload and Service of component.
func Name(validator, component string) string { return validator + "-" + component }

// Desired is every object of v's built-in layout, each owned by v so that
// deleting v deletes it; but the migration dump claim, first, which has no
// owner and is created once.
func Desired(v *v1alpha1.Validator) []client.Object {
	b := newLayout(v)
	var objs []client.Object
	if b.migrationDump() {
		objs = append(objs, b.migrationDumpClaim())
	}
	objs = append(objs,
		b.participant(), b.service(Participant),
		b.validatorApp(), b.service(ValidatorApp))
	if WalletEnabled(b.v) {
		objs = append(objs,
			b.ui(WalletUI, b.cfg.Cluster.Wallet, b.auth().WalletClient), b.service(WalletUI),
			b.ui(ANSUI, &b.cfg.Cluster.NameService, b.auth().NameServiceClient), b.service(ANSUI))
	}
	if !v.Spec.ExternalDatabase {
		objs = append(objs, b.postgres(), b.service(Postgres))
	}
	return objs
}

// layout builds the objects of one validator.
type layout struct {
	v   *v1alpha1.Validator
	cfg *v1alpha1.ValidatorConfig
	// chart: beside Splice's charts, in the release's namespace, with the
	// database the charts expect (charts_data.go).
	chart bool
}

func newLayout(v *v1alpha1.Validator) layout {
	return layout{v: v, cfg: &v.Spec.Config}
}

func newChartLayout(v *v1alpha1.Validator) layout {
	return layout{v: v, cfg: &v.Spec.Config, chart: true}
}

func (b layout) namespace() string {
	if b.chart {
		return ReleaseNamespace(b.v)
	}
	return b.v.Namespace
}

func (b layout) probes() bool { return !ptr.Deref(b.cfg.Cluster.DisableProbes, false) }

func (b layout) auth() v1alpha1.Auth { return ptr.Deref(b.cfg.Auth, v1alpha1.Auth{}) }

func (b layout) image(component string) string {
	return domain.ImageReference(b.cfg.ImageRepo, component, b.cfg.ImageTag)
}

// migrationDump: the validator app keeps its migration dump on a claim, as
// the chart does for every validator but a super validator's.
func (b layout) migrationDump() bool { return !ptr.Deref(b.cfg.Cluster.SVValidator, false) }

func (b layout) name(component string) string { return Name(b.v.Name, component) }

// selector selects a component's pods; it never changes, as workloads require.
func (b layout) selector(component string) map[string]string {
	return map[string]string{ValidatorLabel: b.v.Name, ComponentLabel: component}
}

func (b layout) labels(component string) map[string]string {
	return map[string]string{
		ManagedByLabel:               ManagedBy,
		ValidatorLabel:               b.v.Name,
		ComponentLabel:               component,
		"app.kubernetes.io/name":     component,
		"app.kubernetes.io/instance": b.v.Name,
		"app":                        b.name(component),
		MigrationLabel:               strconv.Itoa(int(b.v.Spec.Migration.ID)),
	}
}

// meta is a component's name, labels and owner (none in chart mode: an
// owner reference cannot cross namespaces).
func (b layout) meta(component string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: b.name(component), Namespace: b.namespace(), Labels: b.labels(component)}
	if !b.chart {
		m.OwnerReferences = []metav1.OwnerReference{b.owner()}
	}
	return m
}

// owner is the controller reference to the Validator.
func (b layout) owner() metav1.OwnerReference {
	return *metav1.NewControllerRef(b.v, cluster.ValidatorGVK)
}

// appUser is the charts' security context of the participant and the
// validator app. The web UIs get none: their images' user is not numeric.
func appUser() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1001), RunAsGroup: ptr.To[int64](1001), FSGroup: ptr.To[int64](1001)}
}

// deployment is a component's Deployment with one container, Recreate
// (the apps hold their database and identity exclusively).
func (b layout) deployment(component string, app *v1alpha1.App, c corev1.Container, sc *corev1.PodSecurityContext) *appsv1.Deployment {
	var res v1alpha1.Workload
	if app != nil {
		res = app.Workload
	}
	c.Resources = mergeResources(c.Resources, res.Resources)
	pod := corev1.PodSpec{
		SecurityContext:  sc,
		Containers:       []corev1.Container{c},
		ImagePullSecrets: res.ImagePullSecrets,
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: b.meta(component),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ptr.Deref(res.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: b.selector(component)},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.labels(component)},
				Spec:       pod,
			},
		},
	}
}

func (b layout) participant() *appsv1.Deployment {
	c := corev1.Container{
		Name:  Participant,
		Image: b.image("canton-participant"),
		Env:   b.participantEnv(),
		Ports: []corev1.ContainerPort{
			{Name: "lg-adm-api", ContainerPort: domain.AdminAPIPort, Protocol: corev1.ProtocolTCP},
			{Name: "lg-api", ContainerPort: domain.LedgerAPIPort, Protocol: corev1.ProtocolTCP},
			{Name: "json-api", ContainerPort: domain.JSONAPIPort, Protocol: corev1.ProtocolTCP},
			{Name: "metrics-api", ContainerPort: metricsPort, Protocol: corev1.ProtocolTCP},
		},
	}
	if ParticipantProbes(b.v) {
		c.LivenessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: participantProbePort, Service: ptr.To("liveness")}},
			InitialDelaySeconds: 600, PeriodSeconds: 60, FailureThreshold: 5, TimeoutSeconds: 10,
		}
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: participantProbePort}},
			InitialDelaySeconds: 5, PeriodSeconds: 5, FailureThreshold: 3, TimeoutSeconds: 10,
		}
	}
	d := b.deployment(Participant, &b.cfg.Participant, c, appUser())
	d.Spec.Template.Spec.InitContainers = []corev1.Container{b.createDatabase(b.participantDatabase())}
	return d
}

func (b layout) validatorApp() *appsv1.Deployment {
	c := corev1.Container{
		Name:  ValidatorApp,
		Image: b.image("validator-app"),
		Env:   b.validatorAppEnv(),
		Ports: []corev1.ContainerPort{{Name: "val-http", ContainerPort: domain.ValidatorAppPort, Protocol: corev1.ProtocolTCP}},
	}
	if b.probes() {
		c.LivenessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/api/validator/livez", Port: intstr.FromInt32(domain.ValidatorAppPort)}},
			InitialDelaySeconds: 60, PeriodSeconds: 60, FailureThreshold: 5, TimeoutSeconds: 10,
		}
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/api/validator/readyz", Port: intstr.FromInt32(domain.ValidatorAppPort)}},
			InitialDelaySeconds: 5, PeriodSeconds: 5, FailureThreshold: 5, TimeoutSeconds: 3,
		}
	}
	d := b.deployment(ValidatorApp, &b.cfg.Cluster.ValidatorApp, c, appUser())
	pod := &d.Spec.Template.Spec
	pod.InitContainers = []corev1.Container{b.createDatabase(validatorDatabase)}
	if imp := b.cfg.Cluster.IdentitiesImport; imp != nil && imp.SecretName != "" {
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: identitiesDumpVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: imp.SecretName}}})
		pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: identitiesDumpVolume, MountPath: identitiesDumpPath, ReadOnly: true})
	}
	if b.migrationDump() {
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: migrationDumpVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: MigrationDumpClaimName(b.v.Name)}}})
		pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: migrationDumpVolume, MountPath: migrationDumpDir})
	}
	return d
}

// MigrationDumpClaimName is the claim of a validator's migration dump.
func MigrationDumpClaimName(validator string) string { return validator + "-" + migrationDumpClaim }

// migrationDumpClaim has no owner, like the chart's: the dump of the last
// migration outlives the validator.
func (b layout) migrationDumpClaim() *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name: MigrationDumpClaimName(b.v.Name), Namespace: b.v.Namespace,
			Labels: map[string]string{ManagedByLabel: ManagedBy, ValidatorLabel: b.v.Name, ComponentLabel: ValidatorApp},
		},
		Spec: b.claimSpec(migrationDumpStorage),
	}
}

// claimSpec is a ReadWriteOnce claim of size in the spec's storage class.
func (b layout) claimSpec(size string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		StorageClassName: domain.NonZero(b.v.Spec.StorageClass),
	}
}

// createDatabaseScript creates $DATABASE_NAME unless it exists, retrying
// until the server answers, as the charts' pg-init containers do.
const createDatabaseScript = `until psql -tAc "SELECT 1 FROM pg_database WHERE datname = '$DATABASE_NAME'" | grep -q 1 ||
  psql -c "CREATE DATABASE \"$DATABASE_NAME\""; do
  echo "database $DATABASE_NAME not created yet; retrying"
  sleep 2
done`

// createDatabase is the init container that creates an app's database.
func (b layout) createDatabase(database string) corev1.Container {
	return b.psql("pg-init", createDatabaseScript, b.databasePassword(), corev1.EnvVar{Name: "DATABASE_NAME", Value: database})
}

// psql is a container that runs script with psql, connected by libpq's
// variables to the validator's database as its user with password.
func (b layout) psql(name, script string, password *corev1.EnvVarSource, env ...corev1.EnvVar) corev1.Container {
	return corev1.Container{
		Name:            name,
		Image:           b.postgresImage(),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"bash", "-c", script},
		Env: append([]corev1.EnvVar{
			{Name: "PGHOST", Value: b.databaseHost()},
			{Name: "PGPORT", Value: b.databasePort()},
			{Name: "PGUSER", Value: b.databaseUser()},
			{Name: "PGPASSWORD", ValueFrom: password},
			{Name: "PGDATABASE", Value: maintenanceDatabase},
		}, env...),
	}
}

// InstanceNames are the names the UIs show (the charts' spliceInstanceNames
// by Key, the image's variable Env): the Global Synchronizer's, which envVars
// or chart values replace for another network (1.11 has no field for them).
var InstanceNames = []struct{ Key, Env, Value string }{
	{"networkName", "SPLICE_APP_UI_NETWORK_NAME", "Canton Network"},
	{"networkFaviconUrl", "SPLICE_APP_UI_NETWORK_FAVICON_URL", "https://www.canton.network/hubfs/cn-favicon-05%201-1.png"},
	{"amuletName", "SPLICE_APP_UI_AMULET_NAME", "Canton Coin"},
	{"amuletNameAcronym", "SPLICE_APP_UI_AMULET_NAME_ACRONYM", "CC"},
	{"nameServiceName", "SPLICE_APP_UI_NAME_SERVICE_NAME", "Canton Name Service"},
	{"nameServiceNameAcronym", "SPLICE_APP_UI_NAME_SERVICE_NAME_ACRONYM", "CNS"},
}

var instanceNames = func() []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(InstanceNames))
	for _, n := range InstanceNames {
		out = append(out, corev1.EnvVar{Name: n.Env, Value: n.Value})
	}
	return out
}()

// ui is a web UI's Deployment. The charts read its client id and authority
// URL from a Secret; both are public, so they come from the auth.
func (b layout) ui(component string, app *v1alpha1.App, clientID string) *appsv1.Deployment {
	auth := b.auth()
	env := append(slices.Clone(instanceNames),
		corev1.EnvVar{Name: "SPLICE_APP_UI_AUTH_URL", Value: ptr.Deref(auth.OIDCAuthorityURL, "")},
		corev1.EnvVar{Name: "SPLICE_APP_UI_AUTH_AUDIENCE", Value: auth.Audience},
		corev1.EnvVar{Name: "SPLICE_APP_UI_AUTH_CLIENT_ID", Value: clientID})
	if app != nil {
		env = AppendEnv(env, app.EnvVars)
	}
	c := corev1.Container{
		Name:  component,
		Image: b.image(component),
		Env:   env,
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: uiPort, Protocol: corev1.ProtocolTCP}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("240Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1536Mi")},
		},
	}
	return b.deployment(component, app, c, nil)
}

// postgres is the internal database, as splice-postgres runs it.
func (b layout) postgres() *appsv1.StatefulSet {
	w := ptr.Deref(b.cfg.DatabaseWorkload, v1alpha1.DatabaseWorkload{})
	user := b.databaseUser()
	c := corev1.Container{
		Name:            Postgres,
		Image:           b.postgresImage(),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            append([]string{"-c", "max_connections=300", "-c", "max_wal_size=2GB"}, ptr.Deref(w.Args, nil)...),
		Env: []corev1.EnvVar{
			{Name: "POSTGRES_USER", Value: user},
			{Name: "POSTGRES_PASSWORD", ValueFrom: b.databasePassword()},
			{Name: "PGDATA", Value: postgresDataDir + "/pgdata"},
		},
		Ports:        []corev1.ContainerPort{{Name: "postgresdb", ContainerPort: 5432, Protocol: corev1.ProtocolTCP}},
		VolumeMounts: append([]corev1.VolumeMount{{Name: postgresDataVolume, MountPath: postgresDataDir}}, ptr.Deref(w.VolumeMounts, nil)...),
	}
	if b.chart {
		// The charts' init steps connect to it.
		c.Env = append(c.Env, corev1.EnvVar{Name: "POSTGRES_DB", Value: ChartBootstrapDatabase})
	}
	if b.probes() {
		c.LivenessProbe = &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"psql", "-U", user, "-d", "template1", "-c", "SELECT 1"}}},
			FailureThreshold: 3, PeriodSeconds: 10, SuccessThreshold: 1, TimeoutSeconds: 1,
		}
	}
	res := w.Workload
	c.Resources = mergeResources(corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("12Gi")},
	}, res.Resources)
	pod := corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: ptr.Deref(w.Volumes, nil), ImagePullSecrets: res.ImagePullSecrets}
	// Without a type: the API server keeps none in a claim template, and
	// the next apply (keepClaimTemplates) would differ.
	claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: postgresDataVolume},
		Spec: b.claimSpec(cmp.Or(b.v.Spec.DatabaseStorage, defaultDatabaseStorage))}
	claim.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: b.meta(Postgres),
		Spec: appsv1.StatefulSetSpec{
			ServiceName: b.name(Postgres),
			Replicas:    ptr.To(ptr.Deref(res.Replicas, 1)),
			Selector:    &metav1.LabelSelector{MatchLabels: b.selector(Postgres)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.labels(Postgres)},
				Spec:       pod,
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim},
		},
	}
}

// postgresImage is the internal database's image, also the init containers'.
func (b layout) postgresImage() string {
	if w := b.cfg.DatabaseWorkload; w != nil && ptr.Deref(w.Image, "") != "" {
		return *w.Image
	}
	return postgresImage
}

// DataClaimName is the claim the StatefulSet makes for the internal
// database's data (its only replica).
func DataClaimName(validator string) string {
	return postgresDataVolume + "-" + Name(validator, Postgres) + "-0"
}

func (b layout) service(component string) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: b.meta(component),
		Spec: corev1.ServiceSpec{
			Selector: b.selector(component),
			Ports:    slices.Clone(servicePorts[component]),
		},
	}
}

// servicePorts are each component's Service ports.
var servicePorts = map[string][]corev1.ServicePort{
	Participant: {tcp("lg-adm-api", domain.AdminAPIPort), tcp("lg-api", domain.LedgerAPIPort),
		tcp("metrics", metricsPort), tcp("json-api", domain.JSONAPIPort)},
	ValidatorApp: {tcp("val-http", domain.ValidatorAppPort), tcp("metrics", metricsPort)},
	WalletUI:     {uiServicePort},
	ANSUI:        {uiServicePort},
	Postgres:     {tcp("postgresdb", 5432)},
}

var uiServicePort = corev1.ServicePort{Name: "http", Port: 80, TargetPort: intstr.FromString("http"),
	Protocol: corev1.ProtocolTCP}

func tcp(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromInt32(port),
		Protocol: corev1.ProtocolTCP}
}

// mergeResources sets the requests and limits r gives over base.
func mergeResources(base corev1.ResourceRequirements, r *corev1.ResourceRequirements) corev1.ResourceRequirements {
	if r == nil {
		return base
	}
	if base.Requests == nil && len(r.Requests) > 0 {
		base.Requests = corev1.ResourceList{}
	}
	if base.Limits == nil && len(r.Limits) > 0 {
		base.Limits = corev1.ResourceList{}
	}
	maps.Copy(base.Requests, r.Requests)
	maps.Copy(base.Limits, r.Limits)
	return base
}
