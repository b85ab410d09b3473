package recovery

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Bounds of the scanner: a member name and a scalar are small, nesting is shallow.
const (
	maxKeyBytes    = 4 << 10
	maxScalarBytes = 4 << 10
	maxDepth       = 1000
)

// copyMember copies the object value of member name of the JSON object in r
// to w byte for byte. Values are scanned, never decoded: an ACS snapshot is a
// base64 string of hundreds of MiB, which a json.Decoder token would hold whole.
func copyMember(r io.Reader, name string, w io.Writer) error {
	s := &jsonScanner{r: bufio.NewReaderSize(r, 64<<10)}
	if err := s.expect('{', "the response is not a JSON object"); err != nil {
		return err
	}
	found := false
	c, err := s.peek()
	if err != nil {
		return err
	}
	if c == '}' {
		_, _ = s.r.ReadByte()
	} else {
		for {
			key, err := s.key()
			if err != nil {
				return err
			}
			if err := s.expect(':', "expected ':' after a member name"); err != nil {
				return err
			}
			if key == name {
				if found {
					return fmt.Errorf("the response has %q twice", name)
				}
				found = true
				if c, err := s.peek(); err != nil {
					return err
				} else if c != '{' {
					return fmt.Errorf("%s is not a JSON object", name)
				}
				if err := s.copyValue(w); err != nil {
					return err
				}
			} else if err := s.copyValue(io.Discard); err != nil {
				return err
			}
			c, err := s.next()
			if err != nil {
				return err
			}
			if c == '}' {
				break
			}
			if c != ',' {
				return fmt.Errorf("malformed JSON: unexpected %q between members", c)
			}
		}
	}
	if _, err := s.peek(); !errors.Is(err, io.ErrUnexpectedEOF) {
		if err == nil {
			return errors.New("malformed JSON: data after the object")
		}
		return err
	}
	if !found {
		return fmt.Errorf("the response has no %s", name)
	}
	return nil
}

// jsonScanner walks JSON text without decoding it.
type jsonScanner struct{ r *bufio.Reader }

// next consumes white space and returns the next byte, consumed.
func (s *jsonScanner) next() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, eof(err)
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c, nil
	}
}

// peek consumes white space and returns the next byte, not consumed.
func (s *jsonScanner) peek() (byte, error) {
	c, err := s.next()
	if err != nil {
		return 0, err
	}
	return c, s.r.UnreadByte()
}

func (s *jsonScanner) expect(want byte, msg string) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c != want {
		return errors.New(msg)
	}
	return nil
}

// key reads a member name.
func (s *jsonScanner) key() (string, error) {
	c, err := s.peek()
	if err != nil {
		return "", err
	}
	if c != '"' {
		return "", errors.New("malformed JSON: expected a member name")
	}
	raw := &capped{max: maxKeyBytes}
	if err := s.copyValue(raw); err != nil {
		return "", err
	}
	var key string
	if err := json.Unmarshal(raw.Bytes(), &key); err != nil {
		return "", fmt.Errorf("malformed JSON: member name: %w", err)
	}
	return key, nil
}

// copyValue copies the next value to w, following nesting and escapes only:
// the validator app parses the dump.
func (s *jsonScanner) copyValue(w io.Writer) error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	switch c {
	case '{', '[', '"':
		return s.copyNested(w)
	case '}', ']', ',', ':':
		return fmt.Errorf("malformed JSON: unexpected %q", c)
	}
	return s.copyScalar(w)
}

func (s *jsonScanner) copyNested(w io.Writer) error {
	var (
		closers  []byte
		inString bool
		escaped  bool
	)
	for {
		if s.r.Buffered() == 0 {
			if _, err := s.r.Peek(1); err != nil {
				return eof(err)
			}
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		end := -1
	scan:
		for i, c := range buf {
			if inString {
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					inString = false
					if len(closers) == 0 {
						end = i
						break scan
					}
				case c < 0x20:
					return errors.New("malformed JSON: control character in a string")
				}
				continue
			}
			switch c {
			case '"':
				inString = true
			case '{', '[':
				if len(closers) == maxDepth {
					return errors.New("malformed JSON: nested too deeply")
				}
				closers = append(closers, c+2) // '{'+2 = '}', '['+2 = ']'
			case '}', ']':
				if len(closers) == 0 || closers[len(closers)-1] != c {
					return fmt.Errorf("malformed JSON: unexpected %q", c)
				}
				closers = closers[:len(closers)-1]
				if len(closers) == 0 {
					end = i
					break scan
				}
			}
		}
		chunk := buf
		if end >= 0 {
			chunk = buf[:end+1]
		}
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		if _, err := s.r.Discard(len(chunk)); err != nil {
			return err
		}
		if end >= 0 {
			return nil
		}
	}
}

// copyScalar copies a number, true, false or null.
func (s *jsonScanner) copyScalar(w io.Writer) error {
	var lit []byte
	for {
		c, err := s.r.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			if err := s.r.UnreadByte(); err != nil {
				return err
			}
			break
		}
		if !scalarByte(c) || len(lit) == maxScalarBytes {
			return fmt.Errorf("malformed JSON: unexpected %q", c)
		}
		lit = append(lit, c)
	}
	if !json.Valid(lit) {
		return fmt.Errorf("malformed JSON: invalid value %q", lit)
	}
	_, err := w.Write(lit)
	return err
}

func scalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// eof turns a premature end into io.ErrUnexpectedEOF: every caller expects more.
func eof(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// capped is a buffer that refuses to grow past max.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if c.Len()+len(p) > c.max {
		return 0, errors.New("malformed JSON: member name too long")
	}
	return c.Buffer.Write(p)
}
