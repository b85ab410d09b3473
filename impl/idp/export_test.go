package idp

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// OpenLocalFor opens the local identity provider of installation.
func OpenLocalFor(dir, installation string) (*Local, error) {
	return OpenLocal(dir, LocalOptions{Installation: installation})
}

// do is withToken of a call that answers only an error.
func (k *Keycloak) do(ctx context.Context, call func(token string) error) error {
	_, err := withToken(ctx, k, func(token string) (struct{}, error) { return struct{}{}, call(token) })
	return err
}

// DeleteUser deletes a user by Keycloak id; an absent user is not an error.
func (k *Keycloak) DeleteUser(ctx context.Context, id string) error {
	if id == "" || id == "." || id == ".." {
		return domain.Invalid("id", "%q is not an identity provider user id", id)
	}
	err := k.do(ctx, func(token string) error {
		return k.client.DeleteUser(ctx, token, k.realm, url.PathEscape(id))
	})
	if err == nil || hasStatus(err, http.StatusNotFound) {
		return nil
	}
	return k.fail(ctx, fmt.Sprintf("delete user %s", id), err)
}
