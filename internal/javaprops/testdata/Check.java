import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;

/**
 * The Java side of javaprops' conformance test (store_java_test.go), run as
 * a single-file program with `java Check.java`. Strings cross between Go
 * and Java as the hex of their UTF-8 bytes, so no escaping or encoding of
 * either side can hide a difference.
 *
 * <pre>
 * java Check.java load FILE
 *     Properties.load(InputStream) FILE and print one "KEYHEX VALUEHEX"
 *     line per entry, sorted.
 * java Check.java store ENTRIES FILE
 *     ENTRIES holds the comments' hex on its first line, then one
 *     "KEYHEX VALUEHEX" line per entry; Properties.store(OutputStream,
 *     comments) them into FILE.
 * </pre>
 */
public class Check {
    public static void main(String[] args) throws IOException {
        if (args.length == 2 && args[0].equals("load")) {
            load(args[1]);
        } else if (args.length == 3 && args[0].equals("store")) {
            store(args[1], args[2]);
        } else {
            System.err.println("usage: java Check.java load FILE | store ENTRIES FILE");
            System.exit(2);
        }
    }

    static void load(String path) throws IOException {
        Properties p = new Properties();
        try (InputStream in = new FileInputStream(path)) {
            p.load(in);
        }
        List<String> lines = new ArrayList<>();
        for (String k : p.stringPropertyNames()) {
            lines.add(hex(k) + " " + hex(p.getProperty(k)));
        }
        Collections.sort(lines);
        for (String l : lines) {
            System.out.println(l);
        }
    }

    static void store(String entries, String path) throws IOException {
        List<String> lines = Files.readAllLines(Paths.get(entries), StandardCharsets.US_ASCII);
        String comments = unhex(lines.get(0));
        Properties p = new Properties();
        for (String l : lines.subList(1, lines.size())) {
            String[] kv = l.split(" ", -1);
            p.setProperty(unhex(kv[0]), unhex(kv[1]));
        }
        try (OutputStream out = new FileOutputStream(path)) {
            p.store(out, comments);
        }
    }

    static String hex(String s) {
        StringBuilder b = new StringBuilder();
        for (byte c : s.getBytes(StandardCharsets.UTF_8)) {
            b.append(String.format("%02x", c & 0xff));
        }
        return b.toString();
    }

    static String unhex(String h) {
        byte[] b = new byte[h.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
        }
        return new String(b, StandardCharsets.UTF_8);
    }
}
