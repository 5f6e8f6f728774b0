package sqltext

import "testing"

func TestQuoting(t *testing.T) {
	for _, c := range []struct{ name, got, want string }{
		{"plain ident", Ident("orders"), "`orders`"},
		{"backtick doubled", Ident("we`ird"), "`we``ird`"},
		{"only backticks", Ident("``"), "``````"},
		{"table", Table("d`b", "t"), "`d``b`.`t`"},
		{"string quote and backslash", String(`it's \ "x"`), `'it\'s \\ "x"'`},
		{"string control bytes", String("a\x00b\nc\rd\x1a"), `'a\0b\nc\rd\Z'`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Run(c.name, func(t *testing.T) {
				if c.got != c.want {
					t.Errorf("got %s, want %s", c.got, c.want)
				}
			})
		})
	}
}
