package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/validator-manager/validator-manager/impl/domain"
)

type walletGatewayRow struct {
	Validator   string `gorm:"primaryKey"`
	Enabled     bool
	BaseURL     string `gorm:"column:base_url"`
	Credentials string
	UpdatedAt   *time.Time `gorm:"autoUpdateTime:false"`
}

func (walletGatewayRow) TableName() string { return "wallet_gateways" }

func (r walletGatewayRow) domain() domain.WalletGateway {
	return domain.WalletGateway{Validator: r.Validator, Enabled: r.Enabled, BaseURL: r.BaseURL, Credentials: r.Credentials, UpdatedAt: utc(r.UpdatedAt)}
}

type gatewayWalletRow struct {
	WalletID        string `gorm:"primaryKey"`
	Validator       string
	PartyHint       string
	PartyID         string
	SigningProvider string
	IsPrimary       bool
	Vault           string
	CreatedAt       time.Time
}

func (gatewayWalletRow) TableName() string { return "gateway_wallets" }

func (r gatewayWalletRow) domain() domain.GatewayWallet {
	return domain.GatewayWallet{
		WalletID: r.WalletID, Validator: r.Validator, PartyHint: r.PartyHint, PartyID: r.PartyID,
		SigningProvider: r.SigningProvider, Primary: r.IsPrimary, Vault: r.Vault, CreatedAt: r.CreatedAt.UTC(),
	}
}

func gatewayWhat(validator string) string {
	return fmt.Sprintf("wallet gateway of validator %q", validator)
}

// WalletGateway reads a validator's wallet gateway; one never set is the
// zero gateway (provider disabled, nothing configured).
func (s *Store) WalletGateway(ctx context.Context, validator string) (domain.WalletGateway, error) {
	g, err := take[walletGatewayRow](s.db.WithContext(ctx), gatewayWhat(validator), "validator = ?", validator)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.WalletGateway{Validator: validator}, nil
	}
	return g, err
}

// UpdateWalletGateway applies change to the validator's wallet gateway and
// stores it, in one transaction that holds the row (a concurrent update
// waits), and stamps UpdatedAt.
func (s *Store) UpdateWalletGateway(ctx context.Context, validator string, change func(*domain.WalletGateway) error) (domain.WalletGateway, error) {
	var out domain.WalletGateway
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// The row exists first, so that the lock below holds it.
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&walletGatewayRow{Validator: validator}).Error; err != nil {
			return translate(err, gatewayWhat(validator), "")
		}
		var row walletGatewayRow
		q := tx
		if s.dialect == "postgres" {
			q = q.Clauses(clause.Locking{Strength: "UPDATE"})
		}
		if err := q.Take(&row, "validator = ?", validator).Error; err != nil {
			return translate(err, gatewayWhat(validator), "")
		}
		g := row.domain()
		if err := change(&g); err != nil {
			return err
		}
		at := now()
		row = walletGatewayRow{Validator: validator, Enabled: g.Enabled, BaseURL: g.BaseURL, Credentials: g.Credentials, UpdatedAt: &at}
		if err := tx.Select("*").Updates(&row).Error; err != nil {
			return translate(err, gatewayWhat(validator), "")
		}
		out = row.domain()
		return nil
	})
	// The commit's own failure (a full disk) is translated too.
	return out, translate(err, gatewayWhat(validator), "")
}

// GatewayWallets reads a validator's wallets in the order they were
// recorded, those whose party is not recorded yet among them.
func (s *Store) GatewayWallets(ctx context.Context, validator string) ([]domain.GatewayWallet, error) {
	var rows []gatewayWalletRow
	err := s.db.WithContext(ctx).Where("validator = ?", validator).Order("created_at, wallet_id").Find(&rows).Error
	if err != nil {
		return nil, translate(err, gatewayWhat(validator), "")
	}
	return domains(rows), nil
}

// RecordWallet records w before its party is allocated. A wallet of the same
// party hint without a party (a create that failed after recording it) is
// taken over with w's provider, primary flag and vault; one with a party is
// domain.ErrConflict.
func (s *Store) RecordWallet(ctx context.Context, w *domain.GatewayWallet) error {
	what := fmt.Sprintf("wallet for party hint %q", w.PartyHint)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row gatewayWalletRow
		err := tx.Take(&row, "validator = ? AND party_hint = ?", w.Validator, w.PartyHint).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			row = gatewayWalletRow{WalletID: w.WalletID, Validator: w.Validator, PartyHint: w.PartyHint,
				SigningProvider: w.SigningProvider, IsPrimary: w.Primary, Vault: w.Vault, CreatedAt: now()}
			if err := tx.Create(&row).Error; err != nil {
				return translate(err, what, "")
			}
		case err != nil:
			return translate(err, what, "")
		case row.PartyID != "":
			return domain.Conflict("a wallet for party hint %q exists already (%s)", w.PartyHint, row.WalletID)
		default:
			row.SigningProvider, row.IsPrimary, row.Vault = w.SigningProvider, w.Primary, w.Vault
			if err := tx.Select("signing_provider", "is_primary", "vault").Updates(&row).Error; err != nil {
				return translate(err, what, "")
			}
		}
		*w = row.domain()
		return nil
	})
	return translate(err, what, "")
}

// CompleteWallet records the party of a recorded wallet; a primary wallet
// demotes the validator's other wallets in the same transaction.
func (s *Store) CompleteWallet(ctx context.Context, w domain.GatewayWallet) error {
	what := fmt.Sprintf("wallet %s", w.WalletID)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if w.Primary {
			err := tx.Model(&gatewayWalletRow{}).Where("validator = ? AND wallet_id <> ? AND is_primary", w.Validator, w.WalletID).
				Update("is_primary", false).Error
			if err != nil {
				return translate(err, what, "")
			}
		}
		res := tx.Model(&gatewayWalletRow{}).Where("wallet_id = ?", w.WalletID).Update("party_id", w.PartyID)
		return affected(res, what)
	})
	return translate(err, what, "")
}

// WalletGatewayNames names every validator with a recorded wallet gateway
// or wallet.
func (s *Store) WalletGatewayNames(ctx context.Context) ([]string, error) {
	var names []string
	err := s.db.WithContext(ctx).Raw("SELECT validator FROM wallet_gateways UNION SELECT validator FROM gateway_wallets ORDER BY 1").Scan(&names).Error
	return names, translate(err, "read the wallet gateways", "")
}

// TakeGatewayChanges reads and deletes up to limit entries of the wallet
// gateways' change feed (wallet_gateway_changes, filled by triggers),
// returning the validators they name, each once.
func (s *Store) TakeGatewayChanges(ctx context.Context, limit int) ([]string, error) {
	names, err := s.takeFeed(ctx, "wallet_gateway_changes", "validator", limit)
	return names, translate(err, "take wallet gateway changes", "")
}
