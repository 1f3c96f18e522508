// Prints X500Principal.getName() (RFC 2253) for each "name<TAB>hex DER"
// line on stdin as "name<TAB>result": the oracle for dn.golden.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HexFormat;
import javax.security.auth.x500.X500Principal;

public class DN {
    public static void main(String[] args) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = r.readLine()) != null) {
            String[] f = line.split("\t");
            X500Principal p = new X500Principal(HexFormat.of().parseHex(f[1]));
            System.out.println(f[0] + "\t" + p.getName());
        }
    }
}
