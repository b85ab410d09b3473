package platform

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/validator-manager/validator-manager/gen/platformapi"
)

// GetApiDocs serves this release's description.
func (s *Server) GetApiDocs(context.Context, platformapi.GetApiDocsRequestObject) (platformapi.GetApiDocsResponseObject, error) {
	return platformapi.GetApiDocs200JSONResponse(s.platformDoc), nil
}

// GetManagementApiDocs serves release 1.11's description.
func (s *Server) GetManagementApiDocs(context.Context, platformapi.GetManagementApiDocsRequestObject) (platformapi.GetManagementApiDocsResponseObject, error) {
	return platformapi.GetManagementApiDocs200JSONResponse(s.managementDoc), nil
}

// GetDocsUi serves the interactive page; its assets are embedded in the binary.
func (s *Server) GetDocsUi(context.Context, platformapi.GetDocsUiRequestObject) (platformapi.GetDocsUiResponseObject, error) {
	return platformapi.GetDocsUi200TexthtmlResponse{Body: bytes.NewReader(s.Docs.Page), ContentLength: int64(len(s.Docs.Page))}, nil
}

func mustDecode(raw []byte) platformapi.ApiDocument {
	var doc platformapi.ApiDocument
	if err := json.Unmarshal(raw, &doc); err != nil {
		panic("platform: description is not JSON: " + err.Error())
	}
	return doc
}
