// A long-lived JVM for the harness's Java programs (ShareOffsets, ShareState, Quorum, ShareAdmin):
// a durable read or a quorum probe then costs a call, not a JVM start (1-3 s of a loaded machine).
// One request per line on stdin: the program's class name and its arguments, separated by tabs.
// The program's main() runs in this JVM with System.out captured; the answer is one line on stdout,
// "@@ksh-helper OK <base64 of what it printed>" or "@@ksh-helper ERR <base64 of the exception>".
// Other lines (a client library logging to the console) are not answers. Requests are served one
// at a time, in order. Usage: java -cp <kafka libs>:<program dirs>:<dir> JavaHelper
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;

public class JavaHelper {
    static final String PREFIX = "@@ksh-helper ";

    static String b64(String text) {
        return Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = System.out;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        out.println(PREFIX + "READY");
        out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\t", -1);
            ByteArrayOutputStream captured = new ByteArrayOutputStream();
            String answer;
            try (PrintStream capture = new PrintStream(captured, true, StandardCharsets.UTF_8)) {
                System.setOut(capture);
                Method main = Class.forName(parts[0]).getMethod("main", String[].class);
                main.invoke(null, (Object) Arrays.copyOfRange(parts, 1, parts.length));
                capture.flush();
                answer = "OK " + b64(captured.toString(StandardCharsets.UTF_8));
            } catch (InvocationTargetException e) {
                answer = "ERR " + b64(String.valueOf(e.getCause()));
            } catch (Throwable e) {
                answer = "ERR " + b64(String.valueOf(e));
            } finally {
                System.setOut(out);
            }
            out.println(PREFIX + answer);
            out.flush();
        }
    }
}
