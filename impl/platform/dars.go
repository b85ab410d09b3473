package platform

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/gen/upstream/ledgerapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// UploadDar streams the multipart part `file` to the ledger's POST /v2/dars
// as it arrives: nothing holds the file whole. The server's upload limit
// (server.maxUploadBytes) cuts the request body; a cut upload is 413.
func (s *Server) UploadDar(ctx context.Context, req platformapi.UploadDarRequestObject) (platformapi.UploadDarResponseObject, error) {
	var part io.Reader
	var fileName string
	for {
		p, err := req.Body.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, domain.Invalid("file", "the multipart body has no part named file")
		}
		if err != nil {
			return nil, bodyError(err)
		}
		if p.FormName() == "file" {
			part, fileName = p, p.FileName()
			break
		}
	}
	n, err := s.node(ctx, "uploadDar", req.Name)
	if err != nil {
		return nil, err
	}
	body := &countingReader{r: part}
	resp, err := n.Ledger.PostV2DarsWithBodyWithResponse(ctx, &ledgerapi.PostV2DarsParams{VetAllPackages: ptr.To(true)}, "application/octet-stream", body)
	if body.err != nil {
		// The client's body failed (cut at the limit, or the client went away).
		return nil, bodyError(body.err)
	}
	if err := answered(upstream.Ledger, n.Target.LedgerURL, err, func() (*http.Response, []byte) { return resp.HTTPResponse, resp.Body }); err != nil {
		return nil, err
	}
	return platformapi.UploadDar200JSONResponse{
		Uploaded: true, SizeBytes: body.n, FileName: domain.NonZero(fileName),
	}, nil
}

// bodyError passes the server's own body errors (413 beyond the limit, 408
// for a stalled client) on as they are, and makes anything else a 400.
func bodyError(err error) error {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return he
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &domain.Error{Code: domain.CodeTooLarge, Message: "the upload is larger than the server accepts", Cause: err}
	}
	return domain.Invalid("file", "the multipart body could not be read: %v", err)
}

// countingReader counts what passes and keeps the first read error that is
// not io.EOF (the client's, not the ledger's).
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && c.err == nil {
		c.err = err
	}
	return n, err
}
