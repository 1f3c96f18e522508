#!/bin/sh
# Regenerates the store fixtures with real tools (OpenSSL 3, Java 17
# keytool) so the Go readers are checked against what operators make.
# Run from this directory: sh gen.sh. Certificates are valid for 100 years.
set -eu
rm -f *.pem *.p12 *.jks *.srl *.csr *.ext
DAYS=36500

# CA, server (localhost, 127.0.0.1) and client, all EC P-256.
openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out ca.key.pem
openssl req -x509 -new -key ca.key.pem -subj "/C=US/O=qk/CN=qk test CA" -days $DAYS -out ca.pem \
	-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign

openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out server.key.pem
openssl req -new -key server.key.pem -subj "/C=US/O=qk/OU=brokers/CN=localhost" -out server.csr
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key.pem -CAcreateserial -days $DAYS -extfile server.ext -out server.crt.pem

openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out client.key.pem
openssl req -new -key client.key.pem -subj "/C=US/O=qk/OU=eng/CN=client" -out client.csr
printf 'extendedKeyUsage=clientAuth\n' > client.ext
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key.pem -CAcreateserial -days $DAYS -extfile client.ext -out client.crt.pem

# PEM keystores: key then chain in one file; the encrypted one is PKCS#8
# PBES2 (PBKDF2-HMAC-SHA256, AES-256-CBC) with ssl.key.password "keypass".
cat server.key.pem server.crt.pem ca.pem > server.keystore.pem
openssl pkcs8 -topk8 -v2 aes-256-cbc -in server.key.pem -passout pass:keypass -out server.key.enc.pem
cat server.key.enc.pem server.crt.pem ca.pem > server.keystore.enc.pem

# PKCS12 and JKS keystores written by keytool (store password
# "storepass"; the JKS key entry's password is "keypass").
openssl pkcs12 -export -inkey server.key.pem -in server.crt.pem -certfile ca.pem -name server \
	-passout pass:storepass -out openssl.p12
keytool -importkeystore -noprompt -srckeystore openssl.p12 -srcstoretype PKCS12 -srcstorepass storepass \
	-destkeystore server.keystore.p12 -deststoretype PKCS12 -deststorepass storepass
keytool -importkeystore -noprompt -srckeystore openssl.p12 -srcstoretype PKCS12 -srcstorepass storepass \
	-destkeystore server.keystore.jks -deststoretype JKS -deststorepass storepass -destkeypass keypass -srcalias server

# Truststores holding the CA as a trusted certificate entry.
keytool -importcert -noprompt -alias ca -file ca.pem -keystore truststore.p12 -storetype PKCS12 -storepass trustpass
keytool -importcert -noprompt -alias ca -file ca.pem -keystore truststore.jks -storetype JKS -storepass trustpass

rm -f openssl.p12 *.srl *.csr *.ext ca.key.pem

# Java's X500Principal.getName() for the subjects in dn.hex (written by
# go test -run TestDistinguishedNameJava -update).
if [ -f dn.hex ]; then java DN.java < dn.hex > dn.golden; fi
