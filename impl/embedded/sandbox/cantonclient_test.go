package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
)

// TestCantonClients runs Canton's own published TypeScript clients
// (testdata/cantonclient/run.mjs, the versions package-lock.json pins) against
// the sandbox, unchanged: the token provider's client-credentials flow
// through OIDC discovery, LedgerClient.init, generateTopology with a raw
// Ed25519 key naming a co-host, allocate at both hosting participants,
// checkIfPartyExists, listing parties and the Splice validator client.
// Every exchange is also checked against the published descriptions.
func TestCantonClients(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "@canton-network", "core-ledger-client")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("@canton-network/core-ledger-client is not installed (run npm ci): %v", err)
		}
		t.Skip("@canton-network/core-ledger-client is not installed: run `npm ci` (make test does)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	var tokens atomic.Int32
	n, _ := open(t, t.TempDir(), &tokens)
	t1, err := n.Target("v1")
	if err != nil {
		t.Fatal(err)
	}
	t2, err := n.Target("v2")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), node, filepath.Join(root, "testdata", "cantonclient", "run.mjs"))
	cmd.Dir = root // node resolves the packages from the repository's node_modules
	cmd.Env = append(os.Environ(),
		"OIDC_CONFIG_URL="+strings.TrimSuffix(t1.Credentials.TokenURL, "/oauth2/token")+"/.well-known/openid-configuration",
		"CLIENT_ID="+sandbox.ClientID, "CLIENT_SECRET="+n.ClientSecret(),
		"LEDGER_1="+t1.LedgerURL, "LEDGER_2="+t2.LedgerURL,
		"VALIDATOR_APP_1="+t1.ValidatorAppURL+"/api/validator",
		"OPERATOR_1=v1-validator-operator",
	)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("Canton's clients against the sandbox: %v", err)
	}
	want := []string{"token provider", "LedgerClient.init", "authenticated user", "generateTopology with a raw key", "allocateExternalParty",
		"allocateExternalParty at the co-host", "checkIfPartyExists", "list parties", "connected synchronizers", "splice validator user"}
	for _, w := range want {
		if !strings.Contains(string(out), "ok "+w) {
			t.Errorf("case %q did not pass", w)
		}
	}
}
