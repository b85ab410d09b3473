package platform

import (
	"context"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// GatewayStore is the database as the wallet gateway's handlers use it: it
// records what the operator asks for, on any replica; the elected leader
// writes it into the Secret <validator>-wallet-gateway. Reads come from the
// database, so an update takes effect on the next call.
type GatewayStore interface {
	WalletGateway(ctx context.Context, validator string) (domain.WalletGateway, error)
	// UpdateWalletGateway applies change to the stored gateway in one transaction.
	UpdateWalletGateway(ctx context.Context, validator string, change func(*domain.WalletGateway) error) (domain.WalletGateway, error)
	GatewayWallets(ctx context.Context, validator string) ([]domain.GatewayWallet, error)
	// RecordWallet records a wallet before its party is allocated, or takes
	// over the record of its party hint whose party is not recorded yet;
	// domain.ErrConflict when that hint has a wallet.
	RecordWallet(ctx context.Context, w *domain.GatewayWallet) error
	// CompleteWallet records the wallet's party (and, when primary,
	// demotes the others).
	CompleteWallet(ctx context.Context, w domain.GatewayWallet) error
}

// PasswordKeys reads the cluster's password key, under which the custody
// provider's credentials are sealed; the leader makes it.
type PasswordKeys interface {
	ReadPasswordKey(ctx context.Context) ([]byte, error)
}
