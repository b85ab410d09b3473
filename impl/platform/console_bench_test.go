package platform_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// BenchmarkConsoleRoundTrip measures the console's round trip through the
// server: one keystroke sent as a binary frame until its echo arrives, and
// one command line (participant.id + Enter) until its output and the next
// prompt have arrived, over loopback; "direct" is the same exchange with
// the sandbox console in-process (no WebSocket, no server). It reports p50
// and p99 per exchange.
func BenchmarkConsoleRoundTrip(b *testing.B) {
	s := startConsole(b, time.Hour)
	ctx := b.Context()

	run := func(b *testing.B, exchange func() error) {
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			start := time.Now()
			if err := exchange(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e6, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e6, "p99-ms")
	}
	// readUntil reads frames until the output since the exchange began ends with want.
	wsExchange := func(c *websocket.Conn, input []byte, want []byte) func() error {
		return func() error {
			if err := c.Write(ctx, websocket.MessageBinary, input); err != nil {
				return err
			}
			var got []byte
			for !bytes.HasSuffix(got, want) {
				_, p, err := c.Read(ctx)
				if err != nil {
					return err
				}
				got = append(got, p...)
			}
			return nil
		}
	}
	keystroke := []byte("x")
	backspace := []byte{0x7f}

	b.Run("keystroke echo, through the server", func(b *testing.B) {
		c := dial(b, s, validator)
		defer c.CloseNow()
		readTerm(b, c, "@ ")
		type_ := wsExchange(c, keystroke, keystroke)
		erase := wsExchange(c, backspace, []byte("\b \b"))
		i := 0
		run(b, func() error {
			i++
			if i%2 == 0 {
				return erase()
			}
			return type_()
		})
	})
	b.Run("command, through the server", func(b *testing.B) {
		c := dial(b, s, validator)
		defer c.CloseNow()
		readTerm(b, c, "@ ")
		run(b, wsExchange(c, []byte("participant.id\r"), []byte("\r\n@ ")))
	})
	b.Run("command, direct", func(b *testing.B) {
		con, err := s.App.Sandbox.OpenConsole(context.Background(), validator)
		if err != nil {
			b.Fatal(err)
		}
		defer con.Close()
		buf := make([]byte, 32<<10)
		read := func(want []byte) error {
			var got []byte
			for !bytes.HasSuffix(got, want) {
				n, err := con.Read(buf)
				if err != nil {
					return err
				}
				got = append(got, buf[:n]...)
			}
			return nil
		}
		if err := read([]byte("@ ")); err != nil {
			b.Fatal(err)
		}
		run(b, func() error {
			if _, err := con.Write([]byte("participant.id\r")); err != nil {
				return err
			}
			return read([]byte("\r\n@ "))
		})
	})
}
