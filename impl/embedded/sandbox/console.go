package sandbox

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

const consolePrompt = "@ "

// Console is a terminal session on a participant's console: a line editor in
// front of a few Canton console commands; output ends lines in CRLF, as a TTY does.
type Console struct {
	n         *Network
	validator string

	mu     sync.Mutex
	cond   *sync.Cond
	out    bytes.Buffer
	line   []byte
	closed bool // Close was called: Read fails
	ended  bool // the console exited: Read drains, then io.EOF
}

// ErrConsoleClosed is Read's error after Close.
var ErrConsoleClosed = errors.New("sandbox console: closed")

// OpenConsole starts a console session on validator's participant.
func (n *Network) OpenConsole(_ context.Context, validator string) (*Console, error) {
	if _, err := n.node(validator); err != nil {
		return nil, err
	}
	c := &Console{n: n, validator: validator}
	c.cond = sync.NewCond(&c.mu)
	c.out.WriteString("Welcome to the sandbox participant console of " + validator + ".\r\n" +
		"Type `help` for the commands this console answers, `exit` to leave.\r\n" + consolePrompt)
	return c, nil
}

// Read returns output; it blocks until there is some, io.EOF after exit.
func (c *Console) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.out.Len() == 0 && !c.closed && !c.ended {
		c.cond.Wait()
	}
	if c.closed {
		return 0, ErrConsoleClosed
	}
	if c.out.Len() == 0 {
		return 0, io.EOF
	}
	return c.out.Read(p)
}

// Write takes terminal input, echoed; Enter runs the line.
func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.ended {
		return 0, io.ErrClosedPipe
	}
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch {
		case b == '\r' || b == '\n':
			if b == '\r' && i+1 < len(p) && p[i+1] == '\n' {
				i++
			}
			c.out.WriteString("\r\n")
			line := strings.TrimSpace(string(c.line))
			c.line = c.line[:0]
			c.run(line)
			if c.ended {
				c.cond.Broadcast()
				return len(p), nil
			}
			c.out.WriteString(consolePrompt)
		case b == 0x7f || b == 0x08: // backspace
			if len(c.line) > 0 {
				c.line = c.line[:len(c.line)-1]
				c.out.WriteString("\b \b")
			}
		case b == 0x03: // Ctrl-C drops the line
			c.line = c.line[:0]
			c.out.WriteString("^C\r\n" + consolePrompt)
		case b == 0x04: // Ctrl-D on an empty line exits
			if len(c.line) == 0 {
				c.out.WriteString("\r\n")
				c.run("exit")
				c.cond.Broadcast()
				return len(p), nil
			}
		case b == 0x1b: // escape sequences (arrows) are not edited: skip them
			if i+1 < len(p) && p[i+1] == '[' {
				i += 2
				for i < len(p) && (p[i] < 0x40 || p[i] > 0x7e) {
					i++
				}
			}
		case b >= 0x20:
			c.line = append(c.line, b)
			c.out.WriteByte(b)
		}
	}
	c.cond.Broadcast()
	return len(p), nil
}

// Resize accepts the terminal's size: the console wraps nothing itself.
func (c *Console) Resize(cols, rows uint16) error { return nil }

// Close ends the session.
func (c *Console) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.cond.Broadcast()
	return nil
}

var consoleHelp = []string{
	"help                              Show the commands this console answers",
	"participant.id                    The participant's unique identifier",
	"participant.health.status         Health of the participant",
	"participant.parties.list()        Parties hosted on the synchronizer",
	"participant.synchronizers.list_connected()  Synchronizers the participant is connected to",
	"exit                              Leave the console",
}

// run answers one command line (c.mu held).
func (c *Console) run(line string) {
	w := func(format string, args ...any) {
		c.out.WriteString(strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", "\r\n"))
	}
	switch strings.ReplaceAll(line, " ", "") {
	case "":
	case "help", "help()":
		for _, h := range consoleHelp {
			w("%s\n", h)
		}
	case "exit", "exit()", "sys.exit()":
		w("Bye.\n")
		c.ended = true
	case "participant.id":
		w("res0: ParticipantId = PAR::%s\n", c.state(func(ns *nodeState, _ *state) string { return ns.participantUID(c.validator) }))
	case "participant.health.status":
		w("%s", c.state(c.healthStatus))
	case "participant.parties.list()":
		w("%s", c.state(c.partiesList))
	case "participant.synchronizers.list_connected()":
		w("%s", c.state(func(_ *nodeState, st *state) string {
			return fmt.Sprintf("res0: Seq[ListConnectedSynchronizersResult] = Vector(\n  ListConnectedSynchronizersResult(synchronizerAlias = global, synchronizerId = %s, healthy = true)\n)\n", st.SynchronizerID)
		}))
	default:
		w("-- Error: Not found: %s (this sandbox console answers a few commands; try `help`)\n", line)
	}
}

func (c *Console) state(f func(ns *nodeState, st *state) string) string {
	n := c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	return f(n.st.Nodes[c.validator], n.st)
}

// healthStatus is the shape of Canton's participant.health.status (n.mu held).
func (c *Console) healthStatus(ns *nodeState, st *state) string {
	var b strings.Builder
	fmt.Fprintf(&b, "res0: NodeStatus[ParticipantStatus] = Participant id: PAR::%s\n", ns.participantUID(c.validator))
	fmt.Fprintf(&b, "Uptime: %s\n", time.Since(c.n.started).Truncate(time.Second))
	b.WriteString("Ports: \n")
	if nd := c.n.nodes[c.validator]; nd != nil {
		fmt.Fprintf(&b, "\tledger: %d\n", port(nd.ledger.ln))
		fmt.Fprintf(&b, "\tadmin: %d\n", port(nd.admin.ln))
	}
	fmt.Fprintf(&b, "Connected synchronizers: \n\t%s\n", st.SynchronizerID)
	b.WriteString("Unhealthy synchronizers: None\nActive: true\n")
	fmt.Fprintf(&b, "Components: \n\tdb-storage : Ok()\n\tsequencer-client : Ok()\nVersion: %s\n", Version)
	return b.String()
}

// partiesList is participant.parties.list() (n.mu held).
func (c *Console) partiesList(ns *nodeState, st *state) string {
	uid := ns.participantUID(c.validator)
	var rows []string
	for _, id := range slices.Sorted(maps.Keys(ns.Parties)) {
		perm := "Submission"
		if h := st.Hosting[id]; h != nil {
			perm = ""
			for _, p := range h.Hosts {
				if p.ParticipantUID == uid {
					perm = cmp.Or(permissionLabels[p.Permission], p.Permission)
				}
			}
			if perm == "" {
				continue
			}
		}
		rows = append(rows, fmt.Sprintf("\n  ListPartiesResult(party = %s, participants = Vector(ParticipantSynchronizers(participant = PAR::%s, synchronizers = Vector(SynchronizerPermission(synchronizerId = %s, permission = %s)))))",
			id, uid, st.SynchronizerID, perm))
	}
	return "res0: Seq[ListPartiesResult] = Vector(" + strings.Join(rows, ",") + "\n)\n"
}

var permissionLabels = map[string]string{"CONFIRMATION": "Confirmation", "OBSERVATION": "Observation", "SUBMISSION": "Submission"}
