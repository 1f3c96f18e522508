// Package tlsconfig builds crypto/tls configurations from Kafka's ssl.*
// settings: Server for the broker's SSL and SASL_SSL listeners, Client for
// qk's inter-broker and tool clients, and Principal for the name Kafka's
// DefaultKafkaPrincipalBuilder gives a client certificate. It is a pure
// library: the caller resolves the settings (defaults included) and wires
// the result into its listeners.
//
// # Stores
//
// Keystores and truststores are read as Kafka reads them:
//
//	ssl.keystore.type   where the key and chain come from
//	-----------------   -----------------------------------------------------
//	PEM                 ssl.keystore.location: one file with the private key
//	                    ("PRIVATE KEY", or "ENCRYPTED PRIVATE KEY" PKCS#8/PBES2
//	                    decrypted with ssl.key.password; unencrypted PKCS#1
//	                    "RSA PRIVATE KEY" and SEC 1 "EC PRIVATE KEY" too) and
//	                    the certificate chain, leaf first; or inline
//	                    ssl.keystore.key + ssl.keystore.certificate.chain
//	PKCS12              ssl.keystore.location + ssl.keystore.password
//	JKS (Kafka default) ssl.keystore.location + ssl.keystore.password, keys
//	                    decrypted with ssl.key.password (or the store's)
//
// As the JVM does since Java 9, a JKS setting reads a PKCS12 file and the
// other way round: the file's first bytes decide. Truststores are PEM
// (file or inline ssl.truststore.certificates), PKCS12 (trusted
// certificate entries, as keytool -importcert writes them) or JKS. No
// truststore means the system roots, for clients and for a server that
// asks for client certificates alike (Kafka falls back on the JVM's).
//
// Errors name the setting and the file and never carry passwords or key
// material.
//
// # Reload
//
// Server's Config answers every handshake through GetConfigForClient. At
// most once a second (checkInterval) a handshake stats the keystore and
// truststore files; when the file (inode), size or modification time
// moved, or the file changed less than racyWindow before it was last read
// (mtimes are coarse), the files are read and hashed, and changed content
// is parsed into a new configuration
// that later handshakes use. A change that fails to parse keeps the old
// configuration and is logged at Warn once per distinct content, so a
// half-written file costs one warning and no outage. Reload does the same
// check at once, without the throttle.
//
// # Protocols and cipher suites
//
// ssl.enabled.protocols become MinVersion and MaxVersion: Go enables a
// range, not a set, which loses nothing once only TLS 1.2 and 1.3 are
// left. ssl.protocol caps the maximum as an
// SSLContext of that version does: TLSv1.2 keeps TLS 1.3 off. TLSv1,
// TLSv1.1 and SSLv3 are skipped as the JDK's jdk.tls.disabledAlgorithms
// skips them (RFC 8996); a list of nothing else is an error.
//
// ssl.cipher.suites take Java's names, which are the IANA names Go's
// tls.CipherSuites reports ("SSL_" prefixes are read as "TLS_"). Go does
// not let TLS 1.3 suites be chosen: naming any TLS 1.3 suite enables all
// three. What Java does with a list is kept where Go can: a list with no
// TLS 1.3 suite keeps TLS 1.3 off, and one with only TLS 1.3 suites keeps
// TLS 1.2 off, since the JDK negotiates no protocol that has no enabled
// suite.
//
// # Principals
//
// Principal formats the certificate's subject as Java's
// X500Principal.getName() does (RFC 2253: most specific RDN first; only
// CN, C, L, ST, O, OU, STREET, DC and UID by keyword, other attributes as
// dotted OID=#hex-of-DER; ',', '=', '+', '<', '>', '#', ';', '"' and '\'
// escaped with a backslash, as are leading and trailing spaces), then
// applies ssl.principal.mapping.rules as Kafka's SslPrincipalMapper does.
// Rule patterns are Go regular expressions (RE2): Java's lookaround and
// back references inside a pattern are refused when the rules are parsed.
package tlsconfig
