package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The password is the file's first line, as the operations guide says: a
// file that notes below it when the password was rotated still guards the
// pages with the first line alone, and a file whose first line is empty is
// refused.
func TestAdminPasswordIsTheFilesFirstLine(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "admin.password")
	if err := os.WriteFile(file, []byte("s3cret operator\r\nrotated on 1 December by ops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	guard, err := adminGuard(file)
	if err != nil {
		t.Fatal(err)
	}
	page := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	status := func(password string) int {
		req := httptest.NewRequest(http.MethodGet, "/_zk/status", nil)
		req.SetBasicAuth("ops", password)
		rec := httptest.NewRecorder()
		page.ServeHTTP(rec, req)
		return rec.Code
	}
	if got := status("s3cret operator"); got != http.StatusOK {
		t.Errorf("the first line as the password: %d, want 200", got)
	}
	for _, wrong := range []string{"s3cret operator\r\nrotated on 1 December by ops", "rotated on 1 December by ops", ""} {
		if got := status(wrong); got != http.StatusUnauthorized {
			t.Errorf("password %q: %d, want 401", wrong, got)
		}
	}

	empty := filepath.Join(dir, "empty.password")
	if err := os.WriteFile(empty, []byte("\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := adminGuard(empty); err == nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("a file whose first line is empty: %v, want an error naming it", err)
	}
}
