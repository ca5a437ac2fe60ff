package driver_test

import (
	"reflect"
	"testing"
)

// A nil []byte argument is NULL; an empty one is an empty VARBINARY.
func TestNilBytesArgumentIsNull(t *testing.T) {
	s := newPageServer(t, false)
	if _, err := s.db(t, "presto").Exec("SELECT ?, ?", []byte(nil), []byte{}); err != nil {
		t.Fatal(err)
	}
	if got, want := s.statements(), []string{"SELECT NULL, X''"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
}
