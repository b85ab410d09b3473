package platform

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/validator-manager/validator-manager/gen/platform"
)

// GetApiDocs serves this release's description.
func (s *Server) GetApiDocs(context.Context, platform.GetApiDocsRequestObject) (platform.GetApiDocsResponseObject, error) {
	return platform.GetApiDocs200JSONResponse(s.platformDoc), nil
}

// GetManagementApiDocs serves release 1.11's description.
func (s *Server) GetManagementApiDocs(context.Context, platform.GetManagementApiDocsRequestObject) (platform.GetManagementApiDocsResponseObject, error) {
	return platform.GetManagementApiDocs200JSONResponse(s.managementDoc), nil
}

// GetDocsUi serves the interactive page; its assets are embedded in the binary.
func (s *Server) GetDocsUi(context.Context, platform.GetDocsUiRequestObject) (platform.GetDocsUiResponseObject, error) {
	return platform.GetDocsUi200TexthtmlResponse{Body: bytes.NewReader(s.docs.Page), ContentLength: int64(len(s.docs.Page))}, nil
}

func mustDecode(raw []byte) platform.ApiDocument {
	var doc platform.ApiDocument
	if err := json.Unmarshal(raw, &doc); err != nil {
		panic("platform: description is not JSON: " + err.Error())
	}
	return doc
}
