package message

import (
	"path"
	"strings"
)

// executableTypes are media types that run code when opened.
var executableTypes = map[string]bool{
	"application/x-msdownload":                      true,
	"application/x-dosexec":                         true,
	"application/x-msdos-program":                   true,
	"application/x-ms-dos-executable":               true,
	"application/x-executable":                      true,
	"application/x-elf":                             true,
	"application/x-sharedlib":                       true,
	"application/x-mach-binary":                     true,
	"application/x-sh":                              true,
	"application/x-shellscript":                     true,
	"application/x-csh":                             true,
	"application/x-bat":                             true,
	"application/x-msi":                             true,
	"application/x-ms-installer":                    true,
	"application/x-ms-shortcut":                     true,
	"application/java-archive":                      true,
	"application/x-java-archive":                    true,
	"application/x-javascript":                      true,
	"application/javascript":                        true,
	"text/javascript":                               true,
	"application/hta":                               true,
	"application/x-vbscript":                        true,
	"text/vbscript":                                 true,
	"application/x-powershell":                      true,
	"application/vnd.microsoft.portable-executable": true,
}

// executableExts are file extensions Windows (or a desktop shell) will run.
var executableExts = map[string]bool{
	".exe": true, ".scr": true, ".bat": true, ".cmd": true, ".com": true,
	".pif": true, ".js": true, ".jse": true, ".vbs": true, ".vbe": true,
	".wsf": true, ".wsh": true, ".msi": true, ".msp": true, ".jar": true,
	".ps1": true, ".psm1": true, ".lnk": true, ".hta": true, ".cpl": true,
	".dll": true, ".reg": true, ".sh": true, ".app": true, ".gadget": true,
	".inf": true, ".msc": true, ".sys": true, ".iso": true, ".img": true,
	".vhd": true, ".appx": true, ".msix": true, ".scf": true, ".url": true,
}

// scanStatus classifies an attachment by name and declared type. It is a
// cheap first line, not a virus scanner: it flags what would execute when a
// user double-clicks it.
func scanStatus(filename, contentType string) string {
	if executableTypes[strings.ToLower(contentType)] {
		return "suspicious"
	}
	name := strings.ToLower(filename)
	// QUIRK: a right-to-left override hides the real extension
	// ("invoice\u202Egpj.exe" displays as "invoiceexe.jpg").
	if strings.ContainsAny(name, "\u202e\u202d\u200f\u2066\u2067\u2068") {
		return "suspicious"
	}
	// QUIRK: Windows ignores trailing dots and spaces, so "x.exe. " runs.
	name = strings.TrimRight(name, ". \t")
	if executableExts[path.Ext(name)] {
		// This also covers double extensions such as "invoice.pdf.exe".
		return "suspicious"
	}
	return "clean"
}
