// Oracle computes next fire times with log4j's CronExpression, the parser
// Canton uses for its pruning schedule, to produce next.tsv.
//
// Input and output lines: expression TAB Canton form TAB start (RFC 3339);
// the output adds up to three fire times, each strictly after the one before,
// or "none". Regenerate (Debian: apt-get install liblog4j2-java):
//
//	cut -f1-3 next.tsv | java -cp /usr/share/java/log4j-core.jar:/usr/share/java/log4j-api.jar Oracle.java > next.tsv.new
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Instant;
import java.util.Date;
import java.util.TimeZone;
import org.apache.logging.log4j.core.util.CronExpression;

public class Oracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.split("\t");
            CronExpression c = new CronExpression(f[1]);
            c.setTimeZone(TimeZone.getTimeZone("UTC"));
            StringBuilder out = new StringBuilder(f[0] + "\t" + f[1] + "\t" + f[2]);
            Date d = Date.from(Instant.parse(f[2]));
            for (int i = 0; i < 3; i++) {
                d = c.getNextValidTimeAfter(d);
                if (d == null) {
                    out.append("\tnone");
                    break;
                }
                out.append("\t").append(d.toInstant());
            }
            System.out.println(out);
        }
    }
}
