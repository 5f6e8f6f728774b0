package flavor

// Hex32 is a SQL expression giving 32 hex digits derived from expr, the shape of the 2017
// benchmark's MD5() strings: MD5 where the server has it, else the first 32 digits of
// SHA2(expr, 256) (MySQL 9.7 removed MD5() and SHA1()).
func (s Server) Hex32(expr string) string {
	if s.IsMariaDB() || !s.Version.AtLeast(9, 0, 0) {
		return "MD5(" + expr + ")"
	}
	return "LEFT(SHA2(" + expr + ", 256), 32)"
}
