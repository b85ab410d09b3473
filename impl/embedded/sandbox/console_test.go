package sandbox_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
)

// readUntil reads the console's output until it contains want.
func readUntil(t *testing.T, c *sandbox.Console, want string) string {
	t.Helper()
	var got strings.Builder
	buf := make([]byte, 4096)
	done := make(chan error, 1)
	go func() {
		for !strings.Contains(got.String(), want) {
			n, err := c.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("reading for %q: %v (got %q)", want, err, got.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no %q in %q", want, got.String())
	}
	return got.String()
}

func TestConsole(t *testing.T) {
	n, err := sandbox.Open(t.TempDir(), sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx := context.Background()
	c, err := n.OpenConsole(ctx, "validator-1")
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, c, "@ ")

	tests := []struct {
		name, input string
		want        []string
	}{
		{"help", "help\r", []string{"participant.health.status", "participant.parties.list()", "exit"}},
		{"echo and backspace", "helx\x7fp\r", []string{"helx\b \bp", "participant.id"}},
		{"participant id", "participant.id\r", []string{"PAR::participant-validator-1::1220"}},
		{"health", "participant.health.status\r", []string{"Participant id: PAR::participant-validator-1::", "Active: true", "\tledger: ", "\tadmin: "}},
		{"parties of the participant", "participant.parties.list()\r", []string{"ListPartiesResult(party = ", "permission = Submission"}},
		{"unknown command", "participant.nope\r", []string{"Not found: participant.nope"}},
		{"Ctrl-C drops the line", "particip\x03", []string{"^C\r\n@ "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := c.Write([]byte(tt.input)); err != nil {
				t.Fatal(err)
			}
			got := readUntil(t, c, tt.want[len(tt.want)-1])
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Fatalf("output %q lacks %q", got, w)
				}
			}
		})
	}
	if err := c.Resize(120, 40); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("exit\r")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, c, "Bye.")
	if _, err := c.Read(make([]byte, 10)); !errors.Is(err, io.EOF) {
		t.Fatalf("read after exit: %v, want EOF", err)
	}
	// A second session, closed by its client.
	c2, _ := n.OpenConsole(ctx, "validator-1")
	c2.Close()
	if _, err := c2.Read(make([]byte, 10)); !errors.Is(err, sandbox.ErrConsoleClosed) {
		t.Fatalf("read after close: %v", err)
	}
}
