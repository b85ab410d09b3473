package platform

import (
	"net/http"
)

const partConsole = "the ledger console (a console opener)"

type ConsoleOptions struct{}

func (s *Server) LedgerConsole(w http.ResponseWriter, r *http.Request) error {
	return notWired("openLedgerConsole", partConsole)
}
