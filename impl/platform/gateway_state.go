package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// GatewayRecord is a validator's wallet gateway state: the custody
// provider's settings, its credentials and the managed wallets.
type GatewayRecord struct {
	Enabled   bool       `json:"enabled"`
	BaseURL   string     `json:"baseUrl,omitempty"`
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
	// Credentials are stored apart from the settings (their own Secret key)
	// and never leave the server.
	Credentials *CustodyCredentials   `json:"-"`
	Wallets     []GatewayWalletRecord `json:"-"`
}

// CustodyCredentials are the provider's API credentials. String and
// LogValue hide them, so that no log line or error message can carry them
// by accident.
type CustodyCredentials struct {
	APIKey    string `json:"apiKey"`
	APISecret string `json:"apiSecret"`
}

func (CustodyCredentials) String() string   { return "[credentials]" }
func (CustodyCredentials) GoString() string { return "[credentials]" }

// GatewayWalletRecord is one managed wallet.
type GatewayWalletRecord struct {
	WalletID  string    `json:"walletId"`
	PartyID   string    `json:"partyId"`
	PartyHint string    `json:"partyHint"`
	Provider  string    `json:"signingProvider"`
	Primary   bool      `json:"primary"`
	Vault     string    `json:"vault,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// GatewayState keeps each validator's wallet gateway record. Reads are never
// cached, so an update takes effect on the next call.
type GatewayState interface {
	Load(ctx context.Context, validator string) (GatewayRecord, error)
	// Update applies change to the current record and stores it; change
	// may be called again when the record changed concurrently.
	Update(ctx context.Context, validator string, change func(*GatewayRecord) error) (GatewayRecord, error)
}

// SecretGateway keeps the record in the Secret `<validator>-wallet-gateway`
// of the watched namespace, read and written through client-go on every
// call: keys settings.json, credentials.json and wallets.json.
type SecretGateway struct {
	Core      kubernetes.Interface
	Namespace string
}

var _ GatewayState = (*SecretGateway)(nil)

const (
	gatewaySettingsKey    = "settings.json"
	gatewayCredentialsKey = "credentials.json"
	gatewayWalletsKey     = "wallets.json"
)

// GatewaySecretName is the Secret holding a validator's wallet gateway state.
func GatewaySecretName(validator string) string { return validator + "-wallet-gateway" }

func (g *SecretGateway) secret(ctx context.Context, validator string) (*corev1.Secret, error) {
	s, err := g.Core.CoreV1().Secrets(g.Namespace).Get(ctx, GatewaySecretName(validator), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, domain.Unavailable("wallet gateway state of %s cannot be read: %v", validator, err)
	}
	return s, nil
}

// Load reads the record; a validator without a Secret has the zero record
// (provider disabled, nothing configured, no wallets).
func (g *SecretGateway) Load(ctx context.Context, validator string) (GatewayRecord, error) {
	s, err := g.secret(ctx, validator)
	if err != nil || s == nil {
		return GatewayRecord{}, err
	}
	return decodeGateway(s)
}

func decodeGateway(s *corev1.Secret) (GatewayRecord, error) {
	var r GatewayRecord
	if b := s.Data[gatewaySettingsKey]; len(b) > 0 {
		if err := json.Unmarshal(b, &r); err != nil {
			return r, fmt.Errorf("secret %s: %s: %w", s.Name, gatewaySettingsKey, err)
		}
	}
	if b := s.Data[gatewayCredentialsKey]; len(b) > 0 {
		var c CustodyCredentials
		if err := json.Unmarshal(b, &c); err != nil {
			// Never wrap the decoder's error: it can quote the secret's bytes.
			return r, fmt.Errorf("secret %s: %s is not valid JSON", s.Name, gatewayCredentialsKey)
		}
		r.Credentials = &c
	}
	if b := s.Data[gatewayWalletsKey]; len(b) > 0 {
		if err := json.Unmarshal(b, &r.Wallets); err != nil {
			return r, fmt.Errorf("secret %s: %s: %w", s.Name, gatewayWalletsKey, err)
		}
	}
	return r, nil
}

func encodeGateway(r GatewayRecord, data map[string][]byte) error {
	settings, err := json.Marshal(r)
	if err != nil {
		return err
	}
	wallets, err := json.Marshal(r.Wallets)
	if err != nil {
		return err
	}
	data[gatewaySettingsKey], data[gatewayWalletsKey] = settings, wallets
	delete(data, gatewayCredentialsKey)
	if r.Credentials != nil {
		c, err := json.Marshal(r.Credentials)
		if err != nil {
			return errors.New("credentials cannot be encoded")
		}
		data[gatewayCredentialsKey] = c
	}
	return nil
}

// Update reads, changes and writes the Secret, retrying on a concurrent
// write (optimistic concurrency through resourceVersion).
func (g *SecretGateway) Update(ctx context.Context, validator string, change func(*GatewayRecord) error) (GatewayRecord, error) {
	secrets := g.Core.CoreV1().Secrets(g.Namespace)
	for range 5 {
		s, err := g.secret(ctx, validator)
		if err != nil {
			return GatewayRecord{}, err
		}
		var r GatewayRecord
		if s != nil {
			if r, err = decodeGateway(s); err != nil {
				return r, err
			}
		}
		if err := change(&r); err != nil {
			return r, err
		}
		if s == nil {
			s = &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{
					Name: GatewaySecretName(validator), Namespace: g.Namespace,
					Labels: map[string]string{"app.kubernetes.io/managed-by": "validator-manager", "validator-manager.io/validator": validator},
				},
				Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{},
			}
			if err := encodeGateway(r, s.Data); err != nil {
				return r, err
			}
			_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
		} else {
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			if err := encodeGateway(r, s.Data); err != nil {
				return r, err
			}
			_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
		}
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return r, domain.Unavailable("wallet gateway state of %s cannot be written: %v", validator, err)
		}
		return r, nil
	}
	return GatewayRecord{}, domain.Conflict("wallet gateway state of %s keeps changing concurrently; retry", validator)
}
