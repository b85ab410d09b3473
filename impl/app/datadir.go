package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/idp"
)

// installationRecord is the ConfigMap of api.namespace in which the
// embedded control plane's etcd records its installation.
const (
	installationRecord = "validator-manager-installation"
	installationKey    = "installation"
)

// claim is one store's record of the installation it belongs to.
type claim struct {
	store        string // a config.Store* name
	where        string // its file, or the cluster's record
	installation string
}

// checkNewDatabase refuses a database that records no installation beside
// stores that record one, unless they start afresh: the database was emptied.
func checkNewDatabase(database, recorded string, claims []claim, afresh func(string) bool) error {
	if recorded != "" {
		return nil
	}
	var wheres, stores []string
	for _, c := range claims {
		if c.installation == "" || afresh(c.store) {
			continue
		}
		wheres = append(wheres, fmt.Sprintf("%s (installation %s)", c.where, c.installation))
		stores = append(stores, c.store)
	}
	if len(wheres) == 0 {
		return nil
	}
	return fmt.Errorf("%s records no installation (it is new or was emptied), but %s say it had one: restore the database from a backup, or begin a new installation with --start-afresh=%s (their files are set aside)",
		database, strings.Join(wheres, ", "), strings.Join(stores, ","))
}

// checkClusterRecord decides whether to write the control plane's
// installation record or refuse the cluster (another's, or emptied).
func checkClusterRecord(where string, present bool, recorded, installation string, validators, fresh, afresh bool) (write bool, err error) {
	const todo = "restore the data directory's cluster/ from a backup, or start the cluster afresh with --start-afresh=cluster (the validators are then made again from the database)"
	switch {
	case present && recorded == installation:
		return false, nil
	case afresh:
		return true, nil
	case present:
		return false, fmt.Errorf("%s belongs to installation %s, the database to %s: it is another installation's cluster; %s", where, recorded, installation, todo)
	case validators && fresh:
		return false, fmt.Errorf("%s is empty (a new cluster), but the database holds validators: the cluster's data was lost; %s", where, todo)
	}
	return true, nil
}

// databaseName names the database in messages (a DSN may hold a password).
func (a *App) databaseName() string {
	if a.Config.DatabaseDriver() == "sqlite" {
		return "database " + a.Config.SQLitePath()
	}
	return "the PostgreSQL database (database.dsn)"
}

// fileClaims are the installations the embedded default's files record;
// a file that is missing or unreadable claims none (opening it says why).
func (a *App) fileClaims() []claim {
	cfg := a.Config
	var out []claim
	if cfg.IdentityMode == config.IdentityLocal {
		out = append(out, claim{store: config.StoreIdentity, where: a.usersFile()})
	}
	if cfg.EmbeddedDefault() {
		out = append(out, claim{store: config.StoreSandbox, where: a.sandboxFile()})
	}
	for i := range out {
		out[i].installation = recordedIn(out[i].where)
	}
	return out
}

func (a *App) usersFile() string { return filepath.Join(a.Config.DataDir, "idp", "users.json") }

func (a *App) sandboxFile() string {
	return filepath.Join(a.Config.DataDir, "sandbox", "state.json")
}

// recordedIn is the installation a JSON state file records, "" if none.
func recordedIn(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var st struct {
		Installation string `json:"installation"`
	}
	if json.Unmarshal(raw, &st) != nil {
		return ""
	}
	return st.Installation
}

// clusterWhere names the embedded control plane's record in messages.
func (a *App) clusterWhere() string {
	return fmt.Sprintf("the embedded control plane's etcd (%s, ConfigMap %s/%s)",
		filepath.Join(a.Config.DataDir, "cluster", "etcd"), a.Config.Namespace, installationRecord)
}

// readClusterRecord reads the control plane's installation record.
func readClusterRecord(ctx context.Context, core kubernetes.Interface, ns string) (present bool, installation string, err error) {
	cm, err := core.CoreV1().ConfigMaps(ns).Get(ctx, installationRecord, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, "", nil
	case err != nil:
		return false, "", fmt.Errorf("embedded control plane: reading its installation record: %w", err)
	}
	return true, cm.Data[installationKey], nil
}

// writeClusterRecord records installation in the control plane.
func writeClusterRecord(ctx context.Context, core kubernetes.Interface, ns, installation string) error {
	cm := corev1ac.ConfigMap(installationRecord, ns).
		WithLabels(map[string]string{cluster.ManagedByLabel: cluster.ManagedBy}).
		WithData(map[string]string{installationKey: installation})
	opts := metav1.ApplyOptions{FieldManager: cluster.FieldOwner, Force: true}
	if _, err := core.CoreV1().ConfigMaps(ns).Apply(ctx, cm, opts); err != nil {
		return fmt.Errorf("embedded control plane: recording its installation: %w", err)
	}
	return nil
}

// openAfresh opens a file store; one refused that startAfresh names is set
// aside and opened empty, one that opens is never touched.
func (a *App) openAfresh(store, path string, refused error, open func(expected bool) error) error {
	err := open(a.expected)
	if err == nil || !errors.Is(err, refused) || !a.Config.Afresh(store) {
		return err
	}
	aside, serr := setAside(path)
	if serr != nil {
		return fmt.Errorf("%w (starting it afresh: %v)", err, serr)
	}
	a.Log.Warn("starting a store afresh (startAfresh)", "store", store, "refused", err.Error(), "setAside", aside)
	return open(false)
}

// setAside renames a refused file out of the way, kept for an operator who
// wants it back.
func setAside(path string) (string, error) {
	aside := path + ".set-aside-" + time.Now().UTC().Format("20060102T150405.000Z")
	if err := os.Rename(path, aside); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	return aside, nil
}

// checkWalletUsers refuses a users file that lacks a wallet user or client
// the database records: nobody could sign in, nor the apps get tokens.
func (a *App) checkWalletUsers(ctx context.Context, local *idp.Local) error {
	users, err := a.Store.WalletUsers(ctx)
	if err != nil {
		return err
	}
	clients, err := a.Store.ProvisionedClients(ctx)
	if err != nil {
		return err
	}
	var lostUsers, lostClients []string
	for name, id := range users {
		if !local.HasUser(id) {
			lostUsers = append(lostUsers, name)
		}
	}
	for name, ids := range clients {
		if slices.ContainsFunc(ids, func(id string) bool { return !local.HasClient(id) }) {
			lostClients = append(lostClients, name)
		}
	}
	var lost []string
	if len(lostUsers) > 0 {
		lost = append(lost, "the wallet users the database records for validators "+names(lostUsers)+" (its users were emptied or dropped)")
	}
	if len(lostClients) > 0 {
		lost = append(lost, "the clients the database records for validators "+names(lostClients)+" (its clients were emptied or dropped)")
	}
	if len(lost) == 0 {
		return nil
	}
	return walletUsersLost{fmt.Errorf("local identity provider: %s lacks %s; "+
		"restore it from a backup, or start the identity provider afresh with --start-afresh=idp (the file is set aside; its users and clients are then gone)",
		a.usersFile(), strings.Join(lost, ", and "))}
}

// names shows up to five names, then a count.
func names(all []string) string {
	slices.Sort(all)
	shown := all[:min(len(all), 5)]
	more := ""
	if len(all) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(all)-len(shown))
	}
	return strings.Join(shown, ", ") + more
}

// walletUsersLost is refused like the users file's own refusals, so that
// --start-afresh=idp applies to it.
type walletUsersLost struct{ error }

func (walletUsersLost) Is(target error) bool { return target == idp.ErrRefused }
