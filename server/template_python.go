package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// This file holds what Hugging Face's chat templates get from Python that the Jinja
// library does not give as Python does: transformers' tojson (json.dumps), strftime_now
// (datetime.now().strftime), and values read from JSON as Python's json reads them.

// jsonValue reads one JSON value as Python's json.loads does: objects keep their key order
// (a repeated key keeps its first place and its last value), integers stay integers.
func jsonValue(raw []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeJSONValue(dec)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Undefined(), errors.New("more than one JSON value")
	}
	return v, nil
}

func decodeJSONValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch tok := tok.(type) {
	case nil:
		return jinja.None(), nil
	case bool:
		return jinja.NewBool(tok), nil
	case string:
		return jinja.NewString(tok), nil
	case json.Number:
		return jsonNumber(tok), nil
	case json.Delim:
		switch tok {
		case '[':
			items := []jinja.Value{}
			for dec.More() {
				v, err := decodeJSONValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			_, err := dec.Token() // ']'
			return jinja.NewList(items), err
		case '{':
			obj := jinja.NewDict()
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				v, err := decodeJSONValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				obj.AsDict().Set(key.(string), v) // the decoder only yields string keys
			}
			_, err := dec.Token() // '}'
			return obj, err
		}
	}
	return jinja.Undefined(), fmt.Errorf("unexpected JSON token %v", tok)
}

// jsonNumber is an int when the JSON number is written as one (Python's json gives int,
// and tojson writes it back without a fraction), else a float.
func jsonNumber(n json.Number) jinja.Value {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := n.Int64(); err == nil {
			return jinja.NewInt(i)
		}
	}
	f, _ := strconv.ParseFloat(s, 64) // out of range: ±Inf, as Python's float()
	return jinja.NewFloat(f)
}

// tojsonFilter is transformers' tojson filter, tojson(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False) = json.dumps with those arguments: Jinja's own escapes
// HTML and sorts keys, which changes the prompt.
func tojsonFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	params := []string{"x", "ensure_ascii", "indent", "separators", "sort_keys"}
	if len(args) > len(params) {
		return jinja.Undefined(), fmt.Errorf("tojson takes at most %d arguments, got %d", len(params)-1, len(args)-1)
	}
	got := map[string]jinja.Value{}
	for i, a := range args {
		got[params[i]] = a
	}
	for k, v := range kwargs {
		if !slices.Contains(params[1:], k) {
			return jinja.Undefined(), fmt.Errorf("tojson() got an unexpected keyword argument '%s'", k)
		}
		if _, dup := got[k]; dup {
			return jinja.Undefined(), fmt.Errorf("tojson() got multiple values for argument '%s'", k)
		}
		got[k] = v
	}
	x, ok := got["x"]
	if !ok {
		return jinja.Undefined(), errors.New("tojson needs a value to encode")
	}
	enc := pyJSONEncoder{itemSep: ", ", keySep: ": "}
	enc.ensureASCII = got["ensure_ascii"].IsTruthy()
	enc.sortKeys = got["sort_keys"].IsTruthy()
	if ind, ok := got["indent"]; ok && !ind.IsNone() && !ind.IsUndefined() {
		switch {
		case ind.IsString():
			enc.indent = ind.AsString()
		case ind.IsInt():
			enc.indent = strings.Repeat(" ", int(max(0, min(ind.AsInt(), 1<<10)))) // Python: " " * indent
		case ind.IsBool(): // a bool is an int in Python
			enc.indent = strings.Repeat(" ", map[bool]int{false: 0, true: 1}[ind.AsBool()])
		default:
			return jinja.Undefined(), fmt.Errorf("tojson: indent must be an integer or a string, got %s", ind)
		}
		enc.indented, enc.itemSep = true, ","
	}
	if sep, ok := got["separators"]; ok && !sep.IsNone() && !sep.IsUndefined() {
		if !sep.IsList() || sep.AsList().Len() != 2 || !sep.AsList().Get(0).IsString() || !sep.AsList().Get(1).IsString() {
			return jinja.Undefined(), fmt.Errorf("tojson: separators must be two strings (item, key), got %s", sep)
		}
		enc.itemSep, enc.keySep = sep.AsList().Get(0).AsString(), sep.AsList().Get(1).AsString()
	}
	var b strings.Builder
	if err := enc.encode(&b, x, 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(b.String()), nil
}

// pyJSONEncoder writes values as Python's json.dumps does.
type pyJSONEncoder struct {
	ensureASCII, sortKeys bool
	indented              bool
	indent                string
	itemSep, keySep       string
}

// maxJSONDepth bounds nesting, as Python's recursion limit does; a template cannot build a
// cycle through the library's values, but a deep value must not exhaust the stack.
const maxJSONDepth = 512

func (e *pyJSONEncoder) encode(b *strings.Builder, v jinja.Value, depth int) error {
	if depth > maxJSONDepth {
		return errors.New("tojson: maximum recursion depth exceeded")
	}
	switch {
	case v.IsNone():
		b.WriteString("null")
	case v.IsBool():
		b.WriteString(map[bool]string{false: "false", true: "true"}[v.AsBool()])
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pyJSONFloat(v.AsFloat()))
	case v.IsString():
		e.writeString(b, v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, item := range items {
			e.separate(b, i, depth+1)
			if err := e.encode(b, item, depth+1); err != nil {
				return err
			}
		}
		e.newline(b, depth)
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		keys := d.OrderedKeys()
		if len(keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		if e.sortKeys {
			slices.Sort(keys) // code point order, as Python sorts str
		}
		b.WriteByte('{')
		for i, k := range keys {
			e.separate(b, i, depth+1)
			e.writeString(b, k)
			b.WriteString(e.keySep)
			val, _ := d.Get(k)
			if err := e.encode(b, val, depth+1); err != nil {
				return err
			}
		}
		e.newline(b, depth)
		b.WriteByte('}')
	case v.IsUndefined():
		return errors.New("Object of type Undefined is not JSON serializable")
	default:
		return errors.New("Object of type function is not JSON serializable")
	}
	return nil
}

// separate writes what goes before item i of a list or object at depth.
func (e *pyJSONEncoder) separate(b *strings.Builder, i, depth int) {
	if i > 0 {
		b.WriteString(e.itemSep)
	}
	e.newline(b, depth)
}

func (e *pyJSONEncoder) newline(b *strings.Builder, depth int) {
	if e.indented {
		b.WriteByte('\n')
		for range depth {
			b.WriteString(e.indent)
		}
	}
}

// writeString quotes s as json.dumps: \" \\ \b \f \n \r \t, other control characters as
// \u00XX, and with ensure_ascii everything outside printable ASCII as \uXXXX (UTF-16).
func (e *pyJSONEncoder) writeString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	u4 := func(r rune) {
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hex[(r>>shift)&0xf])
		}
	}
	b.WriteByte('"')
	for _, r := range s { // invalid UTF-8 reads as U+FFFD: Python strings are always valid
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			u4(r)
		case e.ensureASCII && r > 0x7e:
			if r >= 0x10000 {
				hi, lo := utf16Surrogates(r)
				u4(hi)
				u4(lo)
			} else {
				u4(r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

func utf16Surrogates(r rune) (hi, lo rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// pyJSONFloat writes f as json.dumps does: float.__repr__ (the shortest digits that read
// back as f, in positional notation for exponents -5 < e < 16, else as 1e+16), and NaN,
// Infinity, -Infinity.
func pyJSONFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return pyFloatRepr(f)
}

// pyFloatRepr is Python's repr of a finite float.
func pyFloatRepr(f float64) string {
	sci := strconv.FormatFloat(f, 'e', -1, 64) // "-d.ddde±XX", the shortest round-trip digits
	sign := ""
	if sci[0] == '-' {
		sign, sci = "-", sci[1:]
	}
	mant, expText, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	if exp < -4 || exp >= 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := "+"
		if exp < 0 {
			es, exp = "-", -exp
		}
		return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
	}
	point := exp + 1 // digits before the decimal point
	switch {
	case point <= 0:
		return sign + "0." + strings.Repeat("0", -point) + digits
	case point >= len(digits):
		return sign + digits + strings.Repeat("0", point-len(digits)) + ".0"
	}
	return sign + digits[:point] + "." + digits[point:]
}

// strftimeNow is transformers' strftime_now(format): datetime.now().strftime(format),
// with now as the clock.
func strftimeNow(now func() time.Time) jinja.Value {
	return jinja.NewCallable("strftime_now", func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || len(kwargs) != 0 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now takes one argument, the format string")
		}
		return jinja.NewString(pyStrftime(now(), args[0].AsString())), nil
	})
}

var (
	weekdayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	monthNames   = []string{"January", "February", "March", "April", "May", "June", "July", "August",
		"September", "October", "November", "December"}
)

// pyStrftime formats t as Python's strftime on a naive datetime does on Linux: the C
// library's conversions in the C locale, glibc's flags (- no padding, _ space, 0 zeros,
// ^ and # upper case) and widths, Python's own %f; %z and %Z are empty (a naive
// datetime has no zone); an unknown conversion is copied as written.
func pyStrftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		start := i
		i++
		var flag byte
		for i < len(format) && strings.IndexByte("-_0^#", format[i]) >= 0 {
			flag = format[i]
			i++
		}
		width := 0
		for i < len(format) && format[i] >= '0' && format[i] <= '9' {
			width = min(width*10+int(format[i]-'0'), 1<<10)
			i++
		}
		if i >= len(format) {
			b.WriteString(format[start:])
			break
		}
		text, ok := strftimeConversion(t, format[i], flag, width)
		if !ok {
			b.WriteString(format[start : i+1])
			continue
		}
		b.WriteString(text)
	}
	return b.String()
}

// strftimeConversion is one conversion character c with its flag and width.
func strftimeConversion(t time.Time, c, flag byte, width int) (string, bool) {
	num := func(v, digits int, pad byte) string {
		s := strconv.Itoa(v)
		switch flag {
		case '-':
			return s
		case '_':
			pad = ' '
		case '0':
			pad = '0'
		}
		return padLeft(s, max(digits, width), pad)
	}
	text := func(s string) string {
		if flag == '^' || flag == '#' { // glibc's # upper-cases names (and lower-cases %p)
			s = strings.ToUpper(s)
		}
		if flag == '-' {
			return s
		}
		return padLeft(s, width, ' ')
	}
	hour12 := t.Hour() % 12
	if hour12 == 0 {
		hour12 = 12
	}
	isoYear, isoWeek := t.ISOWeek()
	weekday := int(t.Weekday())
	switch c {
	case 'a':
		return text(weekdayNames[weekday][:3]), true
	case 'A':
		return text(weekdayNames[weekday]), true
	case 'b', 'h':
		return text(monthNames[t.Month()-1][:3]), true
	case 'B':
		return text(monthNames[t.Month()-1]), true
	case 'c':
		return text(pyStrftime(t, "%a %b %e %H:%M:%S %Y")), true
	case 'C':
		return num(t.Year()/100, 2, '0'), true
	case 'd':
		return num(t.Day(), 2, '0'), true
	case 'D', 'x':
		return text(pyStrftime(t, "%m/%d/%y")), true
	case 'e':
		return num(t.Day(), 2, ' '), true
	case 'f':
		return num(t.Nanosecond()/1000, 6, '0'), true
	case 'F':
		return text(pyStrftime(t, "%Y-%m-%d")), true
	case 'g':
		return num(isoYear%100, 2, '0'), true
	case 'G':
		return num(isoYear, 1, '0'), true
	case 'H':
		return num(t.Hour(), 2, '0'), true
	case 'I':
		return num(hour12, 2, '0'), true
	case 'j':
		return num(t.YearDay(), 3, '0'), true
	case 'k':
		return num(t.Hour(), 2, ' '), true
	case 'l':
		return num(hour12, 2, ' '), true
	case 'm':
		return num(int(t.Month()), 2, '0'), true
	case 'M':
		return num(t.Minute(), 2, '0'), true
	case 'n':
		return "\n", true
	case 'p', 'P':
		ampm := "AM"
		if t.Hour() >= 12 {
			ampm = "PM"
		}
		if c == 'P' || flag == '#' {
			return strings.ToLower(ampm), true
		}
		return text(ampm), true
	case 'r':
		return text(pyStrftime(t, "%I:%M:%S %p")), true
	case 'R':
		return text(pyStrftime(t, "%H:%M")), true
	case 's':
		return num(int(t.Unix()), 1, '0'), true
	case 'S':
		return num(t.Second(), 2, '0'), true
	case 't':
		return "\t", true
	case 'T', 'X':
		return text(pyStrftime(t, "%H:%M:%S")), true
	case 'u':
		return num((weekday+6)%7+1, 1, '0'), true
	case 'U':
		return num((t.YearDay()+6-weekday)/7, 2, '0'), true
	case 'V':
		return num(isoWeek, 2, '0'), true
	case 'w':
		return num(weekday, 1, '0'), true
	case 'W':
		return num((t.YearDay()+6-(weekday+6)%7)/7, 2, '0'), true
	case 'y':
		return num(t.Year()%100, 2, '0'), true
	case 'Y':
		return num(t.Year(), 1, '0'), true
	case 'z', 'Z':
		return "", true
	case '%':
		return "%", true
	}
	return "", false
}

func padLeft(s string, width int, pad byte) string {
	if n := width - utf8.RuneCountInString(s); n > 0 {
		return strings.Repeat(string(pad), n) + s
	}
	return s
}

// stringFilter is Jinja's string filter, Python's str(x): None is "None", floats are
// written as Python writes them, lists and dicts as their repr.
func stringFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 || len(kwargs) != 0 {
		return jinja.Undefined(), errors.New("string takes no arguments")
	}
	return jinja.NewString(pyStr(args[0])), nil
}

// pyStr is Python's str of a template value (Jinja's undefined is "").
func pyStr(v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return ""
	case v.IsString():
		return v.AsString()
	}
	return pyRepr(v)
}

// pyRepr is Python's repr of a template value.
func pyRepr(v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return ""
	case v.IsNone():
		return "None"
	case v.IsBool():
		return map[bool]string{false: "False", true: "True"}[v.AsBool()]
	case v.IsInt():
		return strconv.FormatInt(v.AsInt(), 10)
	case v.IsFloat():
		f := v.AsFloat()
		switch {
		case math.IsNaN(f):
			return "nan"
		case math.IsInf(f, 1):
			return "inf"
		case math.IsInf(f, -1):
			return "-inf"
		}
		return pyFloatRepr(f)
	case v.IsString():
		return pyStringRepr(v.AsString())
	case v.IsList():
		parts := make([]string, v.AsList().Len())
		for i, item := range v.AsList().Items {
			parts[i] = pyRepr(item)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case v.IsDict():
		d := v.AsDict()
		parts := make([]string, 0, d.Len())
		for _, k := range d.OrderedKeys() {
			val, _ := d.Get(k)
			parts = append(parts, pyStringRepr(k)+": "+pyRepr(val))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return "<function>"
}

// pyStringRepr quotes s as Python's repr: single quotes unless s holds one and no double
// quote, non-printable characters escaped.
func pyStringRepr(s string) string {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == ' ' || unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// formatFilter is Jinja's format filter, Python's printf-style "fmt % args" (the library
// has none): %s %r %d %i %f %F %e %E %g %G %x %X %o %c and %%, with flags, width and
// precision, or %(name)s with keyword arguments.
func formatFilter(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 || !args[0].IsString() {
		return jinja.Undefined(), errors.New("format needs a format string")
	}
	if len(kwargs) > 0 && len(args) > 1 {
		return jinja.Undefined(), errors.New("format takes positional or keyword arguments, not both")
	}
	out, err := pyPercentFormat(args[0].AsString(), args[1:], kwargs)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("format: %w", err)
	}
	return jinja.NewString(out), nil
}

// pyPercentFormat is Python's format % values.
func pyPercentFormat(format string, values []jinja.Value, named map[string]jinja.Value) (string, error) {
	var b strings.Builder
	next := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		i++
		var v jinja.Value
		haveValue := false
		if i < len(format) && format[i] == '(' {
			end := strings.IndexByte(format[i:], ')')
			if end < 0 {
				return "", errors.New("incomplete format key")
			}
			val, ok := named[format[i+1:i+end]]
			if !ok {
				return "", fmt.Errorf("no value named %q", format[i+1:i+end])
			}
			v, haveValue = val, true
			i += end + 1
		}
		spec := "%"
		for i < len(format) && strings.IndexByte("-+ #0", format[i]) >= 0 {
			spec += format[i : i+1]
			i++
		}
		for i < len(format) && (format[i] >= '0' && format[i] <= '9' || format[i] == '.') {
			spec += format[i : i+1]
			i++
		}
		if i >= len(format) {
			return "", errors.New("incomplete format")
		}
		verb := format[i]
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if !haveValue {
			if next >= len(values) {
				return "", errors.New("not enough arguments for format string")
			}
			v, next = values[next], next+1
		}
		switch verb {
		case 's', 'r':
			s := pyStr(v)
			if verb == 'r' {
				s = pyRepr(v)
			}
			fmt.Fprintf(&b, spec+"s", s)
		case 'd', 'i', 'x', 'X', 'o', 'c':
			n, ok := pyNumber(v)
			if !ok {
				return "", fmt.Errorf("%%%c format: a number is required, not %s", verb, v)
			}
			goVerb := map[byte]string{'d': "d", 'i': "d", 'x': "x", 'X': "X", 'o': "o", 'c': "c"}[verb]
			fmt.Fprintf(&b, spec+goVerb, int64(n))
		case 'f', 'F', 'e', 'E', 'g', 'G':
			n, ok := pyNumber(v)
			if !ok {
				return "", fmt.Errorf("%%%c format: a real number is required, not %s", verb, v)
			}
			if !strings.Contains(spec, ".") {
				spec += ".6" // Python's default precision, which Go's %g lacks
			}
			fmt.Fprintf(&b, spec+strings.ToLower(string(verb)), n)
		default:
			return "", fmt.Errorf("unsupported format character '%c'", verb)
		}
	}
	if next < len(values) {
		return "", errors.New("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

func pyNumber(v jinja.Value) (float64, bool) {
	switch {
	case v.IsInt():
		return float64(v.AsInt()), true
	case v.IsFloat():
		return v.AsFloat(), true
	case v.IsBool():
		return map[bool]float64{false: 0, true: 1}[v.AsBool()], true
	}
	return 0, false
}
