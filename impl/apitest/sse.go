package apitest

import (
	"bufio"
	"strings"
)

// Event is one Server-Sent Event as a client reads it: a comment line (the
// heartbeat) is an Event with Comment set, the reconnection delay one with
// Retry set.
type Event struct {
	ID, Name, Data, Comment, Retry string
}

// ReadEvent reads the next event of a watch stream (a Go client's side of
// live.Stream; the fields it writes, one line each).
func ReadEvent(r *bufio.Reader) (Event, error) {
	var e Event
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return e, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if e != (Event{}) {
				return e, nil
			}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			e.Comment = value
		case "id":
			e.ID = value
		case "event":
			e.Name = value
		case "data":
			e.Data = value
		case "retry":
			e.Retry = value
		}
	}
}
