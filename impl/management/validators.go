package management

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/etag"
	"github.com/validator-manager/validator-manager/impl/faultpoint"
)

// Page defaults (the document leaves them open; see docs/decisions.md).
const (
	defaultLimit = 20
)

func page(from, limit *int32) domain.Page {
	p := domain.Page{Limit: defaultLimit}
	if from != nil {
		p.Offset = int(*from)
	}
	if limit != nil {
		p.Limit = int(*limit)
	}
	return p
}

func (s *Server) ListValidators(ctx context.Context, req managementapi.ListValidatorsRequestObject) (managementapi.ListValidatorsResponseObject, error) {
	f := domain.ValidatorFilter{Page: page(req.Params.From, req.Params.Limit)}
	if req.Params.Name != nil {
		f.NameContains = *req.Params.Name
	}
	if req.Params.Status != nil {
		f.Phase = domain.Phase(*req.Params.Status)
	}
	version, err := s.store.ListVersion(ctx)
	if err != nil {
		return nil, err
	}
	// The page is the generation's and the query's (the namespace and
	// the rendering are the server's).
	tag := etag.Of("1.11", strconv.FormatInt(version, 10), s.namespace, strconv.Itoa(listViewVersion),
		f.NameContains, string(f.Phase), strconv.Itoa(f.Offset), strconv.Itoa(f.Limit))
	if req.Params.IfNoneMatch != nil && etag.Match(*req.Params.IfNoneMatch, tag) {
		return managementapi.ListValidators304Response{Headers: managementapi.NotModifiedResponseHeaders{ETag: &tag}}, nil
	}
	rows, total, err := s.store.ListValidators(ctx, f)
	if err != nil {
		return nil, err
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

// CreateValidator records the validator, marked Creating, and hands the
// create to the intent controller, which makes the wallet user, the
// Validator resource and its Secrets and then clears the mark; the handler
// answers with what the controller did. Of two concurrent creates of one name
// the database lets exactly one record it. A create that does not finish (a
// crash, a failure, a request that gave up) is undone by the controller.
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
	if err := s.checkValidatorAddresses(cfg); err != nil {
		return nil, err
	}
	if err := s.cluster.CheckReferences(ctx, references(cfg)); err != nil {
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
		Creating:         true,
		Claim:            uuid.NewString(),
	}
	if !v.ExternalDatabase {
		v.DatabaseStorage = defaultDatabaseStorage
	}
	if err := setConfig(&v, cfg); err != nil {
		return nil, err
	}

	cr := s.intent.Expect(v.Name, v.Claim, secrets)
	if err := s.store.CreateValidator(ctx, &v); err != nil {
		s.intent.Cancel(cr)
		if errors.Is(err, domain.ErrConflict) {
			return s.createConflict(ctx, dto.Name, err)
		}
		return nil, err
	}
	faultpoint.Reach("create.recorded")
	if prune != nil {
		if err := s.store.CreatePruneSchedule(ctx, prune); err != nil {
			// The record stays Creating with no create waiting: undone.
			s.intent.Cancel(cr)
			s.intent.Enqueue(v.Name)
			return nil, err
		}
	}
	created, err := s.intent.Wait(ctx, cr)
	if err != nil {
		return nil, err
	}
	v.Creating = false
	r, err := s.response(v)
	if err != nil {
		return nil, err
	}
	if created != nil {
		r.CreatedUser = &managementapi.CreatedUserDto{
			Id:                ptr(created.ID),
			Username:          ptr(created.Username),
			TemporaryPassword: ptr(created.TemporaryPassword),
		}
	}
	s.log.InfoContext(ctx, "validator created", "validator", v.Name, "customAuth", customAuth)
	return managementapi.CreateValidator201JSONResponse(r), nil
}

// createConflict answers 409 with the existing validator, as the document
// asks (never with its created user: that was shown once). A record left by
// a create that did not finish is being undone: the caller may retry.
func (s *Server) createConflict(ctx context.Context, name string, cause error) (managementapi.CreateValidatorResponseObject, error) {
	existing, err := s.store.GetValidator(ctx, name)
	if err == nil && existing.Creating {
		// A concurrent create of the name: its outcome decides the answer.
		s.intent.Await(ctx, existing.Claim)
		existing, err = s.store.GetValidator(ctx, name)
	}
	if err == nil && existing.Creating {
		s.intent.Enqueue(name)
		return nil, domain.Conflict("validator %q is being created, or an unfinished create of it is being undone; try again shortly", name)
	}
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
	if len(bad) > 0 {
		return bad
	}
	return nil
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

// UpdateValidator applies a partial edit. Null sections are unchanged;
// immutable fields are refused with 400, a frozen validator with 409. The
// Secrets given are written first (their values are nowhere else), then the
// record, then the cluster is driven to it.
func (s *Server) UpdateValidator(ctx context.Context, req managementapi.UpdateValidatorRequestObject) (managementapi.UpdateValidatorResponseObject, error) {
	edit := *req.Body
	old, err := s.validator(ctx, edit.Name)
	if err != nil {
		return nil, err
	}
	if old.Immutable {
		return nil, domain.Conflict("validator %q is not editable (disableUserEdit)", old.Name)
	}
	cfg, err := old.Config()
	if err != nil {
		return nil, err
	}
	next := old
	secrets, err := applyEdit(&next, &cfg, edit)
	if err != nil {
		return nil, err
	}
	if err := s.checkValidatorAddresses(cfg); err != nil {
		return nil, err
	}
	if err := s.cluster.CheckReferences(ctx, references(cfg)); err != nil {
		return nil, err
	}
	cfg.MarkWritten(secrets.Written())
	if err := setConfig(&next, cfg); err != nil {
		return nil, err
	}
	if err := s.cluster.WriteSecrets(ctx, next.Name, secrets); err != nil {
		return nil, domain.Internal(fmt.Errorf("edit validator %q: %w", next.Name, err))
	}
	faultpoint.Reach("edit.secrets")
	err = s.record(ctx, next.Name, "edit",
		func(ctx context.Context) error { return s.store.UpdateValidator(ctx, &next) })
	if err != nil {
		return nil, domain.Internal(fmt.Errorf("edit validator %q: %w", next.Name, err))
	}
	s.log.InfoContext(ctx, "validator edited", "validator", next.Name)
	return managementapi.UpdateValidator200Response{}, nil
}

// validator reads a validator the API shows: one whose create is still
// running (or was interrupted) is not found.
func (s *Server) validator(ctx context.Context, name string) (domain.Validator, error) {
	v, err := s.store.GetValidator(ctx, name)
	if err == nil && v.Creating {
		return domain.Validator{}, domain.NotFound("validator %q not found", name)
	}
	return v, err
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
