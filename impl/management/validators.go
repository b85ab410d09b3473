package management

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/etag"
	"github.com/validator-manager/validator-manager/impl/faultpoint"
	"github.com/validator-manager/validator-manager/impl/keyring"
)

// defaultLimit is a page's size when limit is absent (the document leaves
// it open; see docs/decisions.md).
const defaultLimit = 20

func page(from, limit *int32) domain.Page {
	return domain.Page{Offset: int(ptr.Deref(from, 0)), Limit: int(ptr.Deref(limit, defaultLimit))}
}

func (s *Server) ListValidators(ctx context.Context, req managementapi.ListValidatorsRequestObject) (managementapi.ListValidatorsResponseObject, error) {
	f := domain.ValidatorFilter{Page: page(req.Params.From, req.Params.Limit),
		NameContains: ptr.Deref(req.Params.Name, ""), Phase: domain.Phase(ptr.Deref(req.Params.Status, ""))}
	// One read of the list's generation serves the page and its tag.
	rows, total, version, err := s.Store.ListPage(ctx, f)
	if err != nil {
		return nil, err
	}
	// The tag names the generation, the server's rendering and the query.
	tag := etag.Of("1.11", strconv.FormatInt(version, 10), s.Namespace, strconv.Itoa(listViewVersion),
		f.NameContains, string(f.Phase), strconv.Itoa(f.Offset), strconv.Itoa(f.Limit))
	if req.Params.IfNoneMatch != nil && etag.Match(*req.Params.IfNoneMatch, tag) {
		return managementapi.ListValidators304Response{Headers: managementapi.NotModifiedResponseHeaders{ETag: &tag}}, nil
	}
	page, err := s.renderPage(ctx, rows, total)
	page.tag = tag
	return page, err
}

// WatchValidators is never routed: the stream is served by a plain handler
// (live.Stream) that writes Server-Sent Events as they come.
func (s *Server) WatchValidators(ctx context.Context, req managementapi.WatchValidatorsRequestObject) (managementapi.WatchValidatorsResponseObject, error) {
	return nil, domain.NotImplemented("watchValidators", "the validators' watch stream")
}

// CreateValidator records the validator (phase PENDING), its pruning
// schedule and its secret values, sealed, in one transaction and answers
// 201: the leader's intent controller provisions it, so a recorded create is
// always finished. The wallet user's temporary password is derived from the
// password key, the name and the create's claim, here for the answer and by
// the leader for the user.
func (s *Server) CreateValidator(ctx context.Context, req managementapi.CreateValidatorRequestObject) (managementapi.CreateValidatorResponseObject, error) {
	dto := *req.Body
	if err := checkCreate(dto); err != nil {
		return nil, err
	}
	prune, err := pruneFromCreate(dto)
	if err != nil {
		return nil, err
	}
	cfg, err := configFromCreate(dto)
	if err != nil {
		return nil, err
	}
	if err := s.checkConfig(ctx, cfg); err != nil {
		return nil, err
	}

	secrets := splitSecrets(dto)
	cfg.MarkWritten(secrets.Written())
	customAuth := dto.CustomAuth != nil && *dto.CustomAuth
	v := domain.Validator{
		Name:             dto.Name,
		Phase:            domain.PhasePending,
		CustomAuth:       customAuth,
		ExternalDatabase: dto.DatabaseConfig != nil && dto.DatabaseConfig.External != nil && *dto.DatabaseConfig.External,
		MigrationID:      dto.ClusterConfig.Migration.Id,
		Migrating:        dto.ClusterConfig.Migration.Migrating != nil && *dto.ClusterConfig.Migration.Migrating,
		Claim:            uuid.NewString(),
	}
	if !v.ExternalDatabase {
		v.DatabaseStorage = defaultDatabaseStorage
	}
	key, err := s.Cluster.ReadPasswordKey(ctx)
	if err != nil {
		return nil, err
	}
	if v.PendingSecrets, err = keyring.Seal(key, v.Name, v.Claim, secrets); err != nil {
		return nil, err
	}
	if err := setConfig(&v, cfg); err != nil {
		return nil, err
	}
	if err := s.checkCharts(ctx, v, prune); err != nil {
		return nil, err
	}
	if err := s.Store.RecordCreate(ctx, &v, prune); err != nil {
		if errors.Is(err, domain.ErrConflict) {
			return s.createConflict(ctx, dto.Name, err)
		}
		return nil, err
	}
	faultpoint.Reach("create.recorded")
	s.Intent.Enqueue(v.Name)
	r, err := s.response(v)
	if err != nil {
		return nil, err
	}
	if !customAuth {
		r.CreatedUser = &managementapi.CreatedUserDto{
			Username:          ptr.To(strings.ToLower(v.Name) + "_walletuser"),
			TemporaryPassword: ptr.To(keyring.TemporaryPassword(key, v.Name, v.Claim)),
		}
	}
	s.Logger.InfoContext(ctx, "validator created", "validator", v.Name, "customAuth", customAuth)
	return managementapi.CreateValidator201JSONResponse(r), nil
}

// createConflict answers 409 with the existing validator, as the document
// asks (never with its created user: that was shown once).
func (s *Server) createConflict(ctx context.Context, name string, cause error) (managementapi.CreateValidatorResponseObject, error) {
	existing, err := s.Store.GetValidator(ctx, name)
	if err != nil {
		return nil, cause
	}
	r, err := s.response(existing)
	if err != nil {
		return nil, err
	}
	return managementapi.CreateValidator409JSONResponse(r), nil
}

// checkCreate enforces what the contract cannot express.
func checkCreate(dto managementapi.ValidatorDto) error {
	bad := checkImage(&dto.ImageRepo, &dto.ImageTag)
	if dto.Auth != nil && (dto.Auth.LedgerApiClientSecret == nil || *dto.Auth.LedgerApiClientSecret == "") {
		bad = append(bad, domain.Invalid("auth.ledgerApiClientSecret", "is required"))
	}
	if db := dto.DatabaseConfig; db != nil && db.External != nil && *db.External {
		bad = append(bad, externalDatabaseAddress(*db)...)
	}
	return bad.Err()
}

// checkImage refuses an imageRepo or imageTag (each when given) from which
// the components' image references would not exist or not parse
// (docs/decisions.md: imageRepo is the registry prefix, not normalised).
func checkImage(repo, tag *string) domain.Invalids {
	var bad domain.Invalids
	if repo != nil {
		if err := domain.CheckImageRepo(*repo); err != nil {
			bad = append(bad, domain.Invalid("imageRepo", "%v", err))
		}
	}
	if tag != nil {
		if err := domain.CheckImageTag(*tag); err != nil {
			bad = append(bad, domain.Invalid("imageTag", "%v", err))
		}
	}
	return bad
}

// externalDatabaseAddress requires where an external database is.
func externalDatabaseAddress(db managementapi.ValidatorDbConfigDto) domain.Invalids {
	var bad domain.Invalids
	if db.Hostname == nil || *db.Hostname == "" {
		bad = append(bad, domain.Invalid("databaseConfig.hostname", "is required for an external database"))
	}
	if db.Port == nil || *db.Port == "" {
		bad = append(bad, domain.Invalid("databaseConfig.port", "is required for an external database"))
	}
	return bad
}

// UpdateValidator records a partial edit, secret values included (sealed,
// merged over those not written yet), in one write. The write is conditional
// on the row being as it was read, else it would undo a write in between;
// the caller asked for a partial change, so the edit is applied again to the
// row as it is now.
func (s *Server) UpdateValidator(ctx context.Context, req managementapi.UpdateValidatorRequestObject) (managementapi.UpdateValidatorResponseObject, error) {
	for attempt := 1; ; attempt++ {
		err := s.updateValidator(ctx, *req.Body)
		if errors.Is(err, domain.ErrWrittenMeanwhile) && attempt < editAttempts {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.Logger.InfoContext(ctx, "validator edited", "validator", req.Body.Name)
		return managementapi.UpdateValidator200Response{}, nil
	}
}

// editAttempts bounds how often an edit is applied again to a row written
// meanwhile; past it the edit is a 409 that asks the caller to retry.
const editAttempts = 10

// updateValidator reads the validator, applies edit and records it, if the
// row was not written since it was read.
func (s *Server) updateValidator(ctx context.Context, edit managementapi.ValidatorEditDto) error {
	old, err := s.Store.GetValidator(ctx, edit.Name)
	if err != nil {
		return err
	}
	if old.Immutable {
		return domain.Conflict("validator %q is not editable (disableUserEdit)", old.Name)
	}
	cfg, err := old.Config()
	if err != nil {
		return err
	}
	next := old
	secrets, err := applyEdit(&next, &cfg, edit)
	if err != nil {
		return err
	}
	if err := s.checkConfig(ctx, cfg); err != nil {
		return err
	}
	cfg.MarkWritten(secrets.Written())
	if err := setConfig(&next, cfg); err != nil {
		return err
	}
	if err := s.checkCharts(ctx, next, nil); err != nil {
		return err
	}
	if secrets != (domain.ValidatorSecrets{}) {
		if next.PendingSecrets, err = s.sealOver(ctx, old, secrets); err != nil {
			return err
		}
	}
	return s.record(ctx, next.Name, "edit",
		func(ctx context.Context) error { return s.Store.UpdateValidator(ctx, &next) })
}

// checkCharts refuses, in chart mode, a validator whose derived values
// Splice's charts at its imageTag refuse (when they are cached).
func (s *Server) checkCharts(ctx context.Context, v domain.Validator, prune *domain.PruneSchedule) error {
	if s.Charts == nil {
		return nil
	}
	return s.Charts.CheckValidator(ctx, v, prune)
}

// sealOver seals the values an edit gives over those of v that the leader
// has not written yet, which are kept.
func (s *Server) sealOver(ctx context.Context, v domain.Validator, next domain.ValidatorSecrets) (string, error) {
	key, err := s.Cluster.ReadPasswordKey(ctx)
	if err != nil {
		return "", err
	}
	claim := v.IdentityClaim()
	pending, err := keyring.Open(key, v.Name, claim, v.PendingSecrets)
	if errors.Is(err, keyring.ErrUnsealable) {
		pending = domain.ValidatorSecrets{} // the leader drops them too, with a warning
	} else if err != nil {
		return "", err
	}
	return keyring.Seal(key, v.Name, claim, keyring.Merge(pending, next))
}

// checkGrow refuses a smaller volume: Kubernetes cannot shrink a PVC.
func checkGrow(current, next string) error {
	want, err := resource.ParseQuantity(next)
	if err != nil {
		return fmt.Errorf("%q is not a quantity", next)
	}
	if current == "" {
		current = defaultDatabaseStorage
	}
	have, err := resource.ParseQuantity(current)
	if err != nil {
		return nil
	}
	if want.Cmp(have) < 0 {
		return fmt.Errorf("must not shrink (from %s to %s)", current, next)
	}
	return nil
}
