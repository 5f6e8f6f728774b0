package pagekey

import "fmt"

// ZipLogEntries inflates page n of a compressed tablespace and says how many records its
// modification log gave back: tests check that the pages they read carry a log.
func ZipLogEntries(s *Source, n uint32) (int, error) {
	if s.zipSize == 0 {
		return 0, fmt.Errorf("the file's pages are not compressed")
	}
	raw := make([]byte, s.zipSize)
	if _, err := s.r.ReadAt(raw, int64(n)*int64(s.zipSize)); err != nil {
		return 0, err
	}
	return s.logical(raw, make(Page, s.PageSize))
}
