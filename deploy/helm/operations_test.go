package helm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/controller/gateway"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
	"github.com/validator-manager/validator-manager/impl/controller/workload/workloadtest"
)

// bindDeployRBAC creates deploy/rbac's Roles in ns and its ClusterRoles
// (named for ns), bound to the ServiceAccount sa of ns and to nothing else.
func bindDeployRBAC(t *testing.T, ns, sa string) {
	t.Helper()
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(apiServer)
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}
	for _, r := range deployRBAC(t) {
		var err error
		switch r.Kind {
		case "Role":
			role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: r.Name}, Rules: r.Rules}
			if _, err = admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err == nil {
				_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: r.Name},
					RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name}, Subjects: subject}, metav1.CreateOptions{})
			}
		case "ClusterRole":
			name := r.Name + "-" + ns
			role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: r.Rules}
			if _, err = admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err == nil {
				_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
					RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: subject}, metav1.CreateOptions{})
			}
		default:
			t.Fatalf("deploy/rbac holds a %s (%s)", r.Kind, r.Name)
		}
		if err != nil {
			t.Fatalf("%s %s: %v", r.Kind, r.Name, err)
		}
	}
}

// Every operation of both releases that touches the cluster runs, through
// a follower, against servers that reach the API server as a
// ServiceAccount bound to exactly the Roles of deploy/rbac: a verb the code
// needs and a Role lacks shows as a failed call, a leader that never
// converges or a log line saying forbidden.
func TestEveryOperationUnderDeployRBAC(t *testing.T) {
	if apiServer == nil {
		t.Skip(skipNoServer)
	}
	ctx := context.Background()
	ns := newNamespace(t, "ops")
	bindDeployRBAC(t, ns, "vm")
	user := "system:serviceaccount:" + ns + ":vm"
	kubeconfig, sa := impersonating(t, user)
	mayExec(t, sa, user, ns)
	sink, _ := logs()
	from := sink.mark()
	// The validators' upstreams get tokens there (unreachable: the
	// proxy's calls fail as upstream failures, after their cluster reads).
	_, f := startReplicas(t, ns, kubeconfig, func(c *config.Config) { c.UpstreamTokenURL = "https://auth.example.test/token" })

	admin := kubernetes.NewForConfigOrDie(apiServer)
	validators := dynamic.NewForConfigOrDie(apiServer).Resource(cluster.ValidatorResource).Namespace(ns)
	// send calls the follower and checks the status; no answer may say
	// the API server refused the server.
	send := func(method, path string, body any, want ...int) string {
		t.Helper()
		code, out := call(t, method, f.url, f.token, path, body)
		if strings.Contains(strings.ToLower(out), "forbidden") {
			t.Errorf("%s %s: the API server refused the server: %d %s", method, path, code, out)
		}
		for _, w := range want {
			if code == w {
				return out
			}
		}
		t.Errorf("%s %s: got %d %s, want %v", method, path, code, out, want)
		return out
	}
	eventually := func(what string, f func() error) { t.Helper(); apitest.Eventually(t, 60*time.Second, what, f) }

	// Release 1.11.
	create(t, f, apitest.ValidatorPayload("acme"))
	eventually("the leader provisions the validator", func() error {
		if _, err := validators.Get(ctx, "acme", metav1.GetOptions{}); err != nil {
			return err
		}
		s, err := admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: cluster.ValidatorLabel + "=acme"})
		if err != nil || len(s.Items) == 0 {
			return fmt.Errorf("Secrets of the validator: %v", err)
		}
		return nil
	})
	send(http.MethodPut, "/api/validators", map[string]any{"name": "acme", "imageTag": "0.4.3", "databaseStorage": "20Gi"}, http.StatusOK)
	eventually("the leader applies the edit", func() error {
		v, err := validators.Get(ctx, "acme", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if raw, _ := json.Marshal(v.Object["spec"]); !strings.Contains(string(raw), "0.4.3") {
			return fmt.Errorf("spec without the new image tag: %s", raw)
		}
		return nil
	})
	prune := map[string]string{"cron": "0 0 20 * * ?", "maxDuration": "1h", "retention": "48h"}
	send(http.MethodPost, "/api/validators/acme/prune", prune, http.StatusCreated)
	prune["retention"] = "72h"
	send(http.MethodPut, "/api/validators/acme/prune", prune, http.StatusNoContent)
	send(http.MethodGet, "/api/validators/acme/prune", nil, http.StatusOK)
	send(http.MethodDelete, "/api/validators/acme/prune", nil, http.StatusNoContent)
	// A backup schedule needs the database running, which a kubelet would
	// report (envtest has none): the status says so as the workload
	// controller would.
	backup := map[string]any{"cron": "0 3 * * *", "maxBackups": 3}
	eventually("a backup schedule", func() error {
		_, err := validators.Patch(ctx, "acme", types.MergePatchType, []byte(`{"status":{"databaseReady":true}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			return err
		}
		code, body := call(t, http.MethodPost, f.url, f.token, "/api/validators/acme/backup", backup)
		if code != http.StatusCreated {
			return fmt.Errorf("status %d: %s", code, body)
		}
		return nil
	})
	eventually("the leader applies the backup CronJob", func() error {
		cj, err := admin.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{LabelSelector: cluster.ValidatorLabel + "=acme"})
		if err != nil || len(cj.Items) == 0 {
			return fmt.Errorf("backup CronJob: %v", err)
		}
		return nil
	})
	backup["maxBackups"] = 5
	send(http.MethodPut, "/api/validators/acme/backup", backup, http.StatusOK)
	send(http.MethodGet, "/api/validators/acme/backup", nil, http.StatusOK)
	send(http.MethodGet, "/api/validators/acme/runs", nil, http.StatusOK)
	send(http.MethodDelete, "/api/validators/acme/backup", nil, http.StatusNoContent)
	eventually("the leader suspends the backup CronJob", func() error {
		cj, err := admin.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{LabelSelector: cluster.ValidatorLabel + "=acme"})
		if err != nil || len(cj.Items) != 1 || cj.Items[0].Spec.Suspend == nil || !*cj.Items[0].Spec.Suspend {
			return fmt.Errorf("backup CronJobs: %d, %v", len(cj.Items), err)
		}
		return nil
	})
	send(http.MethodGet, "/api/validators?limit=10", nil, http.StatusOK)

	// Release 2.0: reads from the cache, the proxy's reads of the
	// validator's Secrets, metrics (pods and metrics.k8s.io, which envtest
	// does not serve: metricsAvailable false).
	for _, p := range []string{"/validators", "/validators/acme", "/validators/acme/status", "/validators/acme/details",
		"/applications", "/applications/metrics", "/validators/acme/wallet-gateway/providers/custody-provider-a", "/validators/acme/wallet-gateway/wallets"} {
		send(http.MethodGet, "/api/v1"+p, nil, http.StatusOK)
	}
	// The wallet gateway: recorded by the follower, written into its
	// Secret by the leader; disabled by a second PUT (an update of the
	// Secret), enabled again for a wallet.
	gw := "/api/v1/validators/acme/wallet-gateway"
	send(http.MethodPut, gw+"/providers/custody-provider-a", map[string]any{"enabled": true, "baseUrl": "https://custody.example.test",
		"credentials": map[string]string{"apiKey": "key-1", "apiSecret": "secret-1"}}, http.StatusOK)
	send(http.MethodPut, gw+"/providers/custody-provider-a", map[string]any{"enabled": false}, http.StatusOK)
	eventually("the leader writes the wallet gateway's Secret", func() error {
		s, err := admin.CoreV1().Secrets(ns).Get(ctx, gateway.SecretName("acme"), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := string(s.Data[gateway.SettingsKey]); !strings.Contains(got, `"enabled":false`) || !strings.Contains(string(s.Data[gateway.CredentialsKey]), "key-1") {
			return fmt.Errorf("settings %s, credentials present %t", got, len(s.Data[gateway.CredentialsKey]) > 0)
		}
		return nil
	})
	send(http.MethodPut, gw+"/providers/custody-provider-a", map[string]any{"enabled": true}, http.StatusOK)
	// The wallet is recorded, then its party allocated: the validator's
	// ledger is not running here (502), and the record stays for a retry.
	send(http.MethodPost, gw+"/wallets", map[string]any{"partyHint": "treasury", "signingProvider": "custody-provider-a"}, http.StatusOK, http.StatusBadGateway)
	eventually("the leader writes the re-enabled gateway", func() error {
		s, err := admin.CoreV1().Secrets(ns).Get(ctx, gateway.SecretName("acme"), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := string(s.Data[gateway.SettingsKey]); !strings.Contains(got, `"enabled":true`) {
			return fmt.Errorf("settings %s", got)
		}
		return nil
	})
	// The console finds the validator's participant pod (a list; there is
	// none without a kubelet) before any exec.
	send(http.MethodGet, "/api/ws/ledger-console?validator=acme", nil, http.StatusBadRequest, http.StatusNotFound, http.StatusConflict,
		http.StatusServiceUnavailable, http.StatusUpgradeRequired, http.StatusBadGateway)

	// Release 1.11 has no delete of a validator: a row removed from the
	// database (by hand, or by an older version) has the leader remove what
	// the cluster holds of it.
	if err := f.app.Store.DeleteValidator(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	eventually("the leader removes the validator", func() error {
		if _, err := validators.Get(ctx, "acme", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Validator resource: %v", err)
		}
		cj, err := admin.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{LabelSelector: cluster.ValidatorLabel + "=acme"})
		if err != nil || len(cj.Items) != 0 {
			return fmt.Errorf("backup CronJobs: %d, %v", len(cj.Items), err)
		}
		return nil
	})

	if refused := sink.lines(from, "forbidden"); len(refused) > 0 {
		t.Errorf("the API server refused the servers under deploy/rbac:\n%s", strings.Join(refused, "\n"))
	}
}

// Chart mode under deploy/rbac: the leader's workload controller, with a
// renderer of a made-up release (workloadtest.Charts) in place of Splice's
// charts, creates the validator's release namespace, applies its objects
// there, prunes what an upgrade no longer renders and deletes the namespace
// with the validator, and the API server refuses none of it.
func TestChartModeUnderDeployRBAC(t *testing.T) {
	if apiServer == nil {
		t.Skip(skipNoServer)
	}
	ctx := context.Background()
	ns := newNamespace(t, "charts")
	bindDeployRBAC(t, ns, "vm")
	kubeconfig, _ := impersonating(t, "system:serviceaccount:"+ns+":vm")
	sink, _ := logs()
	from := sink.mark()
	charts := &workloadtest.Charts{}
	_, f := startReplicas(t, ns, kubeconfig, nil, app.With(func(o *workload.Options) { o.Renderer = charts }))
	admin := kubernetes.NewForConfigOrDie(apiServer)
	validators := dynamic.NewForConfigOrDie(apiServer).Resource(cluster.ValidatorResource).Namespace(ns)
	eventually := func(what string, f func() error) { t.Helper(); apitest.Eventually(t, 60*time.Second, what, f) }

	payload := apitest.ValidatorPayload("acme")
	payload.ImageTag = workloadtest.VersionA
	create(t, f, payload)
	release := ""
	eventually("the leader applies the release", func() error {
		v, err := validators.Get(ctx, "acme", metav1.GetOptions{})
		if err != nil {
			return err
		}
		release, _, _ = unstructured.NestedString(v.Object, "status", "namespace")
		if release == "" {
			return fmt.Errorf("no status.namespace yet")
		}
		_, err = admin.AppsV1().Deployments(release).Get(ctx, workloadtest.Extra, metav1.GetOptions{})
		return err
	})
	// The status follows the apply (the leader writes it once the
	// objects are read back), and the follower's cache follows the status.
	eventually("the status names the release", func() error {
		code, body := call(t, http.MethodGet, f.url, f.token, "/api/v1/validators/acme/status", nil)
		if code != http.StatusOK || !strings.Contains(body, `"namespace":"`+release+`"`) || !strings.Contains(body, workloadtest.Digest(workloadtest.VersionA)) {
			return fmt.Errorf("status: %d %s, want the release namespace and the chart's digest", code, body)
		}
		return nil
	})
	code, body := call(t, http.MethodPut, f.url, f.token, "/api/validators", map[string]any{"name": "acme", "imageTag": workloadtest.VersionB})
	if code != http.StatusOK {
		t.Fatalf("edit: %d %s", code, body)
	}
	eventually("the leader prunes what the new version does not render", func() error {
		if _, err := admin.AppsV1().Deployments(release).Get(ctx, workloadtest.Extra, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Deployment %s: %v", workloadtest.Extra, err)
		}
		return nil
	})
	if err := f.app.Store.DeleteValidator(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	// The release holds a claim (its data): the leader deletes the
	// workloads in it and keeps the namespace with the claim.
	eventually("the leader deletes the validator and its release's workloads", func() error {
		if _, err := validators.Get(ctx, "acme", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Validator resource: %v", err)
		}
		deployments, err := admin.AppsV1().Deployments(release).List(ctx, metav1.ListOptions{})
		if err != nil || len(deployments.Items) > 0 {
			return fmt.Errorf("deployments in %s: %v %d", release, err, len(deployments.Items))
		}
		n, err := admin.CoreV1().Namespaces().Get(ctx, release, metav1.GetOptions{})
		if err != nil || n.DeletionTimestamp != nil {
			return fmt.Errorf("namespace %s: %v, want kept with its claims", release, err)
		}
		return nil
	})
	if refused := sink.lines(from, "forbidden"); len(refused) > 0 {
		t.Errorf("the API server refused the servers under deploy/rbac:\n%s", strings.Join(refused, "\n"))
	}
}
