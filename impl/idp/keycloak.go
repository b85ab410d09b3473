package idp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Nerzal/gocloak/v13"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// KeycloakConfig locates Keycloak and the admin client that creates wallet users.
type KeycloakConfig struct {
	// BaseURL is Keycloak's root URL, the part before /realms: with /auth
	// for Keycloak before 17 or one started with --http-relative-path=/auth.
	BaseURL string
	// PublicURL is Keycloak's root URL as the validators' pods reach it
	// (their JWKS, OIDC and token URLs); empty means BaseURL.
	PublicURL string
	// Realm holds the wallet users, the validators' clients and the admin client.
	Realm string
	// ClientID and ClientSecret are a service-account client of Realm with
	// the realm-management roles manage-users and view-users.
	ClientID     string
	ClientSecret string
	// UIs are where the validators' UIs are, their clients' redirect URIs.
	UIs UIs
}

// keycloakTimeout bounds each HTTP request to Keycloak.
const keycloakTimeout = 30 * time.Second

// updatePassword is Keycloak's required action that forces a new password at first login.
const updatePassword = "UPDATE_PASSWORD"

// Keycloak creates wallet users over Keycloak's admin REST API.
type Keycloak struct {
	client    *gocloak.GoCloak
	publicURL string
	uis       UIs
	realm     string
	clientID  string
	secret    string
	now       func() time.Time

	// fetch is a one-slot semaphore: a single admin token request at a time,
	// so concurrent calls wait for it instead of each requesting one.
	fetch chan struct{}

	mu     sync.Mutex // guards token and expiry
	token  string
	expiry time.Time
}

// NewKeycloak checks cfg; it does not contact Keycloak (Ping does).
func NewKeycloak(cfg KeycloakConfig) (*Keycloak, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("identity provider: keycloak base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	switch {
	case cfg.Realm == "" || strings.ContainsAny(cfg.Realm, "/?#"):
		return nil, fmt.Errorf("identity provider: keycloak realm %q is not a realm name", cfg.Realm)
	case cfg.ClientID == "":
		return nil, errors.New("identity provider: keycloak client id is required")
	case cfg.ClientSecret == "":
		return nil, errors.New("identity provider: keycloak client secret is required")
	}
	public := cfg.PublicURL
	if public == "" {
		public = cfg.BaseURL
	} else if p, err := url.Parse(public); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return nil, fmt.Errorf("identity provider: keycloak public URL %q is not an http(s) URL", public)
	}
	if err := CheckUITemplate(cfg.UIs.Template); err != nil {
		return nil, fmt.Errorf("identity provider: UI address: %w", err)
	}
	client := gocloak.NewClient(cfg.BaseURL)
	// Every failure is returned as an error; resty's own stderr logging
	// would only duplicate it.
	client.RestyClient().SetTimeout(keycloakTimeout).SetLogger(quiet{})
	return &Keycloak{
		client:    client,
		publicURL: public,
		uis:       cfg.UIs,
		realm:     cfg.Realm,
		clientID:  cfg.ClientID,
		secret:    cfg.ClientSecret,
		now:       time.Now,
		fetch:     make(chan struct{}, 1),
	}, nil
}

// CreateWalletUser creates <validator>_walletuser with the temporary password
// given, in the create request so that a password policy failure leaves no
// user. A user of that name that carries claim is adopted; one that does not
// is domain.ErrConflict.
func (k *Keycloak) CreateWalletUser(ctx context.Context, validator, claim, password string) (domain.CreatedUser, error) {
	username, err := walletUsername(validator)
	if err != nil {
		return domain.CreatedUser{}, err
	}
	op := fmt.Sprintf("create user %q", username)
	if password == "" {
		return domain.CreatedUser{}, domain.Invalid("password", "a temporary password is required to create %q", username)
	}
	user := gocloak.User{
		Username:        gocloak.StringP(username),
		Enabled:         gocloak.BoolP(true),
		RequiredActions: &[]string{updatePassword},
		Credentials: &[]gocloak.CredentialRepresentation{{
			Type:      gocloak.StringP("password"),
			Value:     gocloak.StringP(password),
			Temporary: gocloak.BoolP(true),
		}},
	}
	if claim != "" {
		user.Attributes = &map[string][]string{ClaimAttribute: {claim}}
	}
	id, err := withToken(ctx, k, func(token string) (string, error) {
		return k.client.CreateUser(ctx, token, k.realm, user)
	})
	if hasStatus(err, http.StatusConflict) {
		u, ferr := k.find(ctx, username)
		if ferr != nil {
			return domain.CreatedUser{}, k.fail(ctx, op, ferr, password)
		}
		if !userCarries(u, claim) {
			return domain.CreatedUser{}, domain.Conflict("identity provider user %q already exists", username)
		}
		return domain.CreatedUser{ID: *u.ID, Username: username, TemporaryPassword: password}, nil
	}
	if err != nil {
		return domain.CreatedUser{}, k.fail(ctx, op, err, password)
	}
	if id == "" {
		// Keycloak answers 201 with a Location header; look the user up if a
		// proxy dropped it.
		u, err := k.find(ctx, username)
		if err == nil && u == nil {
			err = errors.New("keycloak answered 201 without a Location header and the user cannot be found")
		}
		if err != nil {
			return domain.CreatedUser{}, k.fail(ctx, op, err, password)
		}
		id = *u.ID
	}
	return domain.CreatedUser{ID: id, Username: username, TemporaryPassword: password}, nil
}

// userCarries tells whether u (nil: none) carries claim.
func userCarries(u *gocloak.User, claim string) bool {
	return u != nil && claim != "" && u.Attributes != nil && slices.Contains((*u.Attributes)[ClaimAttribute], claim)
}

// find returns the user of exactly username, or nil when there is none.
func (k *Keycloak) find(ctx context.Context, username string) (*gocloak.User, error) {
	users, err := withToken(ctx, k, func(token string) ([]*gocloak.User, error) {
		return k.client.GetUsers(ctx, token, k.realm, gocloak.GetUsersParams{
			Username: gocloak.StringP(username),
			Exact:    gocloak.BoolP(true),
		})
	})
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		if u != nil && strings.EqualFold(gocloak.PString(u.Username), username) && gocloak.PString(u.ID) != "" {
			return u, nil
		}
	}
	return nil, nil
}

// UserExists tells whether the realm holds the user of id (the leader's
// look for a wallet user deleted by hand).
func (k *Keycloak) UserExists(ctx context.Context, id string) (bool, error) {
	_, err := withToken(ctx, k, func(token string) (*gocloak.User, error) {
		return k.client.GetUserByID(ctx, token, k.realm, id)
	})
	switch {
	case err == nil:
		return true, nil
	case hasStatus(err, http.StatusNotFound):
		return false, nil
	}
	return false, k.fail(ctx, "read user "+id, err)
}

// Ping requests a new admin token: Keycloak is reachable and the client
// credentials are valid.
func (k *Keycloak) Ping(ctx context.Context) error {
	if _, err := k.adminToken(ctx, true); err != nil {
		return k.fail(ctx, "ping", err)
	}
	return nil
}

// withToken runs call with the admin token, and once more with a new one
// after a 401: Keycloak no longer accepts the cached token (restart, revoked).
func withToken[T any](ctx context.Context, k *Keycloak, call func(token string) (T, error)) (T, error) {
	token, err := k.adminToken(ctx, false)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := call(token)
	if !hasStatus(err, http.StatusUnauthorized) {
		return v, err
	}
	k.drop(token)
	if token, err = k.adminToken(ctx, false); err != nil {
		return v, err
	}
	return call(token)
}

// adminToken returns the cached admin token, or requests one when there is
// none, it is about to expire, or fresh is set.
func (k *Keycloak) adminToken(ctx context.Context, fresh bool) (string, error) {
	if token, ok := k.cached(); ok && !fresh {
		return token, nil
	}
	select {
	case k.fetch <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-k.fetch }()
	// Another caller may have fetched one while this one waited.
	if token, ok := k.cached(); ok && !fresh {
		return token, nil
	}
	issued := k.now()
	jwt, err := k.client.LoginClient(ctx, k.clientID, k.secret, k.realm)
	if err != nil {
		return "", &tokenError{err: err}
	}
	if jwt.AccessToken == "" {
		return "", &tokenError{err: errors.New("token response carries no access_token")}
	}
	lifetime := time.Duration(jwt.ExpiresIn) * time.Second
	// Refresh before expiry so that a token is never sent as it lapses.
	margin := min(30*time.Second, lifetime/2)
	k.mu.Lock()
	k.token, k.expiry = jwt.AccessToken, issued.Add(lifetime-margin)
	k.mu.Unlock()
	return jwt.AccessToken, nil
}

func (k *Keycloak) cached() (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.token, k.token != "" && k.now().Before(k.expiry)
}

// drop forgets token unless another caller has already replaced it.
func (k *Keycloak) drop(token string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.token == token {
		k.token = ""
	}
}

// tokenError is a failed admin token request.
type tokenError struct{ err error }

func (e *tokenError) Error() string { return "admin token: " + e.err.Error() }
func (e *tokenError) Unwrap() error { return e.err }

// fail turns a failure of op into the adapter's error: the HTTP status and,
// below 500, Keycloak's message with the secrets masked, since it may echo
// them; never a request body.
func (k *Keycloak) fail(ctx context.Context, op string, err error, secrets ...string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("identity provider: %s: %w", op, ctxErr)
	}
	secrets = append(secrets, k.secret)
	prefix := ""
	var te *tokenError
	if errors.As(err, &te) {
		prefix = "admin token: "
	}
	var api *gocloak.APIError
	switch {
	case !errors.As(err, &api):
		return errors.New("identity provider: " + op + ": " + Mask(err.Error(), secrets...))
	case api.Code == 0:
		// The request did not complete: the message names the URL and the cause.
		return errors.New("identity provider: " + op + ": " + prefix + "keycloak unreachable: " + Mask(api.Message, secrets...))
	case api.Code >= 500:
		return fmt.Errorf("identity provider: %s: %skeycloak answered %d %s", op, prefix, api.Code, http.StatusText(api.Code))
	default:
		return errors.New("identity provider: " + op + ": " + prefix + "keycloak answered " + Mask(api.Message, secrets...))
	}
}

// hasStatus tells whether err is Keycloak answering status.
func hasStatus(err error, status int) bool {
	var api *gocloak.APIError
	var te *tokenError
	return errors.As(err, &api) && api.Code == status && !errors.As(err, &te)
}

// quiet is resty's logger, silenced.
type quiet struct{}

func (quiet) Errorf(string, ...any) {}
func (quiet) Warnf(string, ...any)  {}
func (quiet) Debugf(string, ...any) {}
