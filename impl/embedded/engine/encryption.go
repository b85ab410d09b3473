package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/validator-manager/validator-manager/impl/atomicfile"
)

// Secrets are encrypted at rest in etcd with secretbox, then read with
// identity too, so that those an unencrypted engine wrote still read
// (docs/decisions.md, "Secrets encrypted at rest").
const (
	encryptionKeyFile    = "secrets-encryption.key"
	encryptionConfigFile = "encryption-config.yaml"
	encryptedMarkerFile  = "secrets-encrypted"
	// EncryptedPrefix starts every Secret's value as etcd stores it.
	EncryptedPrefix = "k8s:enc:secretbox:v1:key1:"
)

func (e *Engine) path(name string) string { return filepath.Join(e.opts.Dir, name) }

// encryptionConfig makes the key on a first start and writes the
// apiserver's EncryptionConfiguration; it returns the file's path. A lost
// key is refused rather than replaced: a new key cannot read the Secrets.
func (e *Engine) encryptionConfig() (string, error) {
	keyFile := e.path(encryptionKeyFile)
	key, err := os.ReadFile(keyFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, merr := os.Stat(e.path(encryptedMarkerFile)); merr == nil && !e.fresh {
			return "", fmt.Errorf("%s is missing, but etcd's Secrets were encrypted with it: restore the file from a backup of the data directory (a new key cannot read them)", keyFile)
		}
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			return "", err
		}
		key = []byte(base64.StdEncoding.EncodeToString(raw) + "\n")
		if err := atomicfile.Write(keyFile, key, 0o600); err != nil {
			return "", err
		}
		e.log.Info("engine: made the key that encrypts Secrets in etcd", "file", keyFile)
	case err != nil:
		return "", err
	}
	k := strings.TrimSpace(string(key))
	if raw, err := base64.StdEncoding.DecodeString(k); err != nil || len(raw) != 32 {
		return "", fmt.Errorf("%s: want 32 bytes in base64 (the key that encrypts Secrets in etcd)", keyFile)
	}
	cfg := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - secretbox:
          keys:
            - name: key1
              secret: %s
      - identity: {}
`, k)
	file := e.path(encryptionConfigFile)
	return file, atomicfile.Write(file, []byte(cfg), 0o600)
}

// migrateSecrets rewrites every Secret once, unchanged, which encrypts those
// an unencrypted engine stored: the apiserver writes a value it read through
// a provider other than the first even when nothing changed.
func (e *Engine) migrateSecrets(ctx context.Context) error {
	marker := e.path(encryptedMarkerFile)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	core, err := kubernetes.NewForConfig(e.RESTConfig())
	if err != nil {
		return err
	}
	secrets := core.CoreV1().Secrets(metav1.NamespaceAll)
	n := 0
	for opts := (metav1.ListOptions{Limit: 500}); ; {
		list, err := secrets.List(ctx, opts)
		if err != nil {
			return fmt.Errorf("encrypt stored Secrets: %w", err)
		}
		for i := range list.Items {
			if err := rewriteSecret(ctx, core, &list.Items[i]); err != nil {
				return fmt.Errorf("encrypt stored Secret %s/%s: %w", list.Items[i].Namespace, list.Items[i].Name, err)
			}
		}
		n += len(list.Items)
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	if n > 0 {
		e.log.Info("engine: encrypted the Secrets stored before encryption at rest", "secrets", n)
	}
	return atomicfile.Write(marker, []byte("secretbox key1\n"), 0o600)
}

// rewriteSecret updates s unchanged, reading it again after a conflict; a
// Secret deleted meanwhile needs nothing.
func rewriteSecret(ctx context.Context, core kubernetes.Interface, s *corev1.Secret) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		_, err := core.CoreV1().Secrets(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if cur, gerr := core.CoreV1().Secrets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{}); gerr == nil {
				s = cur
			}
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
