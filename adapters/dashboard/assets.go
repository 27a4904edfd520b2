package dashboard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// asset is one embedded file as served.
type asset struct {
	body        []byte
	contentType string
	etag        string // a hash of body: a new build's asset is fetched again
}

// assetTypes are the content types of the assets, by extension: set here rather than
// from the system's MIME table, which differs between machines.
var assetTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
	".svg": "image/svg+xml",
}

// loadAssets reads every embedded asset once; an asset of an unknown type is an error.
func loadAssets() (map[string]asset, error) {
	out := make(map[string]asset)
	err := fs.WalkDir(assetFS, "assets", func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		ct, ok := assetTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("%s: no content type for its extension", p)
		}
		b, err := fs.ReadFile(assetFS, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[strings.TrimPrefix(p, "assets/")] = asset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	return out, err
}

// asset answers /ui/assets/{file}: only the embedded files by their exact names, so a
// path with "." or ".." segments, or anything else, is not found.
func (h *Handler) asset(w http.ResponseWriter, r *http.Request, name string) {
	a, ok := h.assets[name]
	if !ok {
		notFound(w)
		return
	}
	securityHeaders(w)
	hd := w.Header()
	hd.Set("Content-Type", a.contentType)
	hd.Set("ETag", a.etag)
	// Revalidated on every load (a 304 while unchanged), so that a broker's upgrade
	// never leaves a browser running an old script against new fragments.
	hd.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}
