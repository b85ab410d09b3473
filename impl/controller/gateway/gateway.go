// Package gateway is the leader's controller that writes each validator's
// wallet gateway (release 2.0's custody provider settings, credentials and
// wallets), as the database records it, into the Secret a wallet gateway in
// the cluster mounts; it learns of the handlers' writes from a change feed.
package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/controller/backoff"
	"github.com/validator-manager/validator-manager/impl/controller/changefeed"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/keyring"
)

// Store is the database as this controller reads it.
type Store interface {
	WalletGateway(ctx context.Context, validator string) (domain.WalletGateway, error)
	GatewayWallets(ctx context.Context, validator string) ([]domain.GatewayWallet, error)
	// WalletGatewayNames names every validator with a recorded gateway.
	WalletGatewayNames(ctx context.Context) ([]string, error)
	// TakeGatewayChanges reads and removes up to limit names of the feed.
	TakeGatewayChanges(ctx context.Context, limit int) ([]string, error)
}

// Keys reads the cluster's password key, under which the credentials are
// sealed in the database.
type Keys interface {
	PasswordKey(ctx context.Context) ([]byte, error)
}

// Options build a Controller.
type Options struct {
	Store     Store
	Keys      Keys
	Namespace string
	Logger    *slog.Logger
}

// Controller applies the wallet gateways' Secrets.
type Controller struct {
	client    client.Client
	store     Store
	keys      Keys
	namespace string
	log       *slog.Logger
	named     chan event.TypedGenericEvent[string]
}

// New builds the controller over c, the Manager's client.
func New(c client.Client, o Options) *Controller {
	return &Controller{client: c, store: o.Store, keys: o.Keys, namespace: o.Namespace,
		log: cmp.Or(o.Logger, slog.New(slog.DiscardHandler)), named: make(chan event.TypedGenericEvent[string], feedPage)}
}

// The change feed is taken every feedEvery, feedPage names at a time.
const (
	feedEvery = 200 * time.Millisecond
	feedPage  = 500
)

// SetupWithManager runs the controller and its change feed under mgr, on
// the elected leader only.
func (g *Controller) SetupWithManager(mgr ctrl.Manager) error {
	byName := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, name string) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: g.namespace, Name: name}}}
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("wallet-gateway").
		WatchesRawSource(source.Channel(g.named, byName)).
		WithOptions(controller.Options{RateLimiter: backoff.RateLimiter[reconcile.Request](5 * time.Millisecond)}).
		Complete(g)
	if err != nil {
		return err
	}
	// A Runnable without NeedLeaderElection runs on the leader only.
	return mgr.Add(manager.RunnableFunc(g.feed))
}

// feed names every recorded gateway at start (so that a Secret changed by
// hand is written again), then what the change feed names.
func (g *Controller) feed(ctx context.Context) error {
	var names []string
	if !changefeed.Retry(ctx, feedEvery, func(ctx context.Context) (err error) {
		names, err = g.store.WalletGatewayNames(ctx)
		return err
	}, func(err error) { g.log.Warn("reading the wallet gateways to write; retrying", "error", err) }) {
		return nil
	}
	changefeed.Send(ctx, g.named, names)
	changefeed.Follow(ctx, feedEvery, feedPage, g.store.TakeGatewayChanges, g.named, func(err error) {
		g.log.Warn("reading the wallet gateways' change feed", "error", err)
	})
	return nil
}

// Reconcile writes one validator's recorded wallet gateway into its Secret.
func (g *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	err := g.apply(ctx, req.Name)
	if err != nil && ctx.Err() == nil {
		g.log.Warn("the wallet gateway's Secret does not match its record yet; retrying", "validator", req.Name, "error", err)
	}
	return reconcile.Result{}, err
}

func (g *Controller) apply(ctx context.Context, validator string) error {
	gw, err := g.store.WalletGateway(ctx, validator)
	if err != nil {
		return err
	}
	wallets, err := g.store.GatewayWallets(ctx, validator)
	if err != nil {
		return err
	}
	var creds *domain.CustodyCredentials
	if gw.Credentials != "" {
		key, err := g.keys.PasswordKey(ctx)
		if err != nil {
			return fmt.Errorf("the cluster's password key: %w", err)
		}
		c, err := keyring.OpenCredentials(key, validator, gw.Credentials)
		if errors.Is(err, keyring.ErrUnsealable) {
			// The key's Secret was replaced: the operator gives them again.
			g.log.Warn("the custody provider's credentials recorded for a validator do not open under the cluster's password key and are left out of its Secret; give them again",
				"validator", validator)
		} else if err != nil {
			return err
		} else {
			creds = &c
		}
	}
	data, err := SecretData(gw, wallets, creds)
	if err != nil {
		return err
	}
	s := corev1ac.Secret(SecretName(validator), g.namespace).
		WithLabels(map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, cluster.ValidatorLabel: validator}).
		WithType(corev1.SecretTypeOpaque).
		WithData(data)
	return g.client.Apply(ctx, s, client.FieldOwner(cluster.FieldOwner), client.ForceOwnership)
}

// SecretName is the Secret holding a validator's wallet gateway.
func SecretName(validator string) string { return validator + "-wallet-gateway" }

// The Secret's keys (credentials.json is absent when none are set).
const (
	SettingsKey    = "settings.json"
	CredentialsKey = "credentials.json"
	WalletsKey     = "wallets.json"
)

type settings struct {
	Enabled   bool       `json:"enabled"`
	BaseURL   string     `json:"baseUrl,omitempty"`
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
}

type wallet struct {
	WalletID  string    `json:"walletId"`
	PartyID   string    `json:"partyId"`
	PartyHint string    `json:"partyHint"`
	Provider  string    `json:"signingProvider"`
	Primary   bool      `json:"primary"`
	Vault     string    `json:"vault,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// SecretData is the Secret's data for a recorded gateway, its wallets whose
// party is recorded and its opened credentials.
func SecretData(gw domain.WalletGateway, wallets []domain.GatewayWallet, creds *domain.CustodyCredentials) (map[string][]byte, error) {
	s, err := json.Marshal(settings{Enabled: gw.Enabled, BaseURL: gw.BaseURL, UpdatedAt: gw.UpdatedAt})
	if err != nil {
		return nil, err
	}
	ws := []wallet{}
	for _, w := range wallets {
		if w.PartyID == "" {
			continue
		}
		ws = append(ws, wallet{WalletID: w.WalletID, PartyID: w.PartyID, PartyHint: w.PartyHint, Provider: w.SigningProvider,
			Primary: w.Primary, Vault: w.Vault, CreatedAt: w.CreatedAt})
	}
	wb, err := json.Marshal(ws)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{SettingsKey: s, WalletsKey: wb}
	if creds != nil {
		c, err := json.Marshal(creds)
		if err != nil {
			return nil, errors.New("credentials cannot be encoded")
		}
		data[CredentialsKey] = c
	}
	return data, nil
}
