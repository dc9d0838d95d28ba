/*
 * XaProbe -- what pgJDBC does against a paimon_sink sink, for test/drivers
 * (run by test/py/drivers.py, which prints and judges these lines):
 *   one-phase XA (start, write_as, INSERT, end, commit(xid, onePhase=true))
 *   commits and the rows are staged; two-phase XA (prepare) is refused;
 *   a job function on a connection with setAutoCommit(false) gets 25001.
 *
 * Arguments: host port sink commit_user fence_epoch first_checkpoint_id
 * first_row_id.  Each line of output is "name: key=value ...".  The exit
 * status is 0 when the program ran to its end (the judging is the caller's),
 * 1 on an unexpected error.
 */
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.XAConnection;
import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;
import org.postgresql.xa.PGXADataSource;

public class XaProbe {
    /** ProbeXid is an XA transaction id of this probe, numbered n. */
    static final class ProbeXid implements Xid {
        private final byte[] gtrid;
        private final byte[] bqual;

        ProbeXid(int n) {
            gtrid = ("xaprobe-" + n + "-" + System.nanoTime()).getBytes();
            bqual = ("b" + n).getBytes();
        }

        public int getFormatId() { return 4242; }
        public byte[] getGlobalTransactionId() { return gtrid; }
        public byte[] getBranchQualifier() { return bqual; }
    }

    static String sink, commitUser;
    static long epoch;

    /** sqlState returns the SQLSTATE of the first SQLException in t's causes, or "-". */
    static String sqlState(Throwable t) {
        for (; t != null; t = t.getCause())
            if (t instanceof SQLException && ((SQLException) t).getSQLState() != null)
                return ((SQLException) t).getSQLState();
        return "-";
    }

    /** firstLine returns the first line of the innermost message of t. */
    static String firstLine(Throwable t) {
        Throwable last = t;
        for (; t != null; t = t.getCause())
            last = t;
        String m = String.valueOf(last.getMessage());
        int nl = m.indexOf('\n');
        return nl < 0 ? m : m.substring(0, nl);
    }

    /** xaCodeName names an XAException error code. */
    static String xaCodeName(int code) {
        switch (code) {
            case XAException.XAER_RMFAIL: return "XAER_RMFAIL";
            case XAException.XAER_RMERR: return "XAER_RMERR";
            case XAException.XAER_NOTA: return "XAER_NOTA";
            case XAException.XAER_PROTO: return "XAER_PROTO";
            default: return "other";
        }
    }

    /** report prints one line for an exception caught by the step named name. */
    static void report(String name, Throwable t) {
        StringBuilder b = new StringBuilder(name + ": exception=" + t.getClass().getName());
        if (t instanceof XAException) {
            int c = ((XAException) t).errorCode;
            b.append(" errorCode=").append(c).append(" (").append(xaCodeName(c)).append(")");
        }
        b.append(" sqlstate=").append(sqlState(t)).append(" message=\"").append(firstLine(t)).append("\"");
        System.out.println(b);
    }

    /** writeAs names the job's identity for the transaction open on c. */
    static void writeAs(Connection c, int writerId) throws SQLException {
        try (PreparedStatement p = c.prepareStatement("SELECT paimon_sink.write_as(?, ?, ?, ?)")) {
            p.setString(1, sink);
            p.setString(2, commitUser);
            p.setInt(3, writerId);
            p.setLong(4, epoch);
            p.executeQuery().close();
        }
    }

    /** insertRows inserts n rows with ids from first into the sink on c. */
    static void insertRows(Connection c, long first, int n) throws SQLException {
        try (PreparedStatement p = c.prepareStatement(
                "INSERT INTO " + sink + " (id, payload) SELECT g, 'xa' FROM generate_series(?::bigint, ?::bigint) g")) {
            p.setLong(1, first);
            p.setLong(2, first + n - 1);
            p.executeUpdate();
        }
    }

    /** prepareAndCommit prepares checkpoint ckpt of writer id w with expected rows and commits it, on c (autocommit); returns the rows prepared. */
    static long prepareAndCommit(Connection c, long ckpt, int w, long expected) throws SQLException {
        long rows = 0;
        try (PreparedStatement p = c.prepareStatement(
                "SELECT coalesce(sum(row_count), 0) FROM paimon_sink.prepare_commit(?, ?, ?, writer_id => ?, "
                + "fence_epoch => ?, expected_rows => ?)")) {
            p.setString(1, sink);
            p.setString(2, commitUser);
            p.setLong(3, ckpt);
            p.setInt(4, w);
            p.setLong(5, epoch);
            p.setLong(6, expected);
            try (ResultSet r = p.executeQuery()) {
                r.next();
                rows = r.getLong(1);
            }
        }
        try (PreparedStatement p = c.prepareStatement(
                "SELECT * FROM paimon_sink.commit(?, ?, ?, fence_epoch => ?)")) {
            p.setString(1, sink);
            p.setString(2, commitUser);
            p.setLong(3, ckpt);
            p.setLong(4, epoch);
            p.executeQuery().close();
        }
        return rows;
    }

    /** countIds counts the target rows (table events) with ids in [first, first + n). */
    static long countIds(Connection c, long first, int n) throws SQLException {
        try (PreparedStatement p = c.prepareStatement("SELECT count(*) FROM events WHERE id >= ? AND id < ?")) {
            p.setLong(1, first);
            p.setLong(2, first + n);
            try (ResultSet r = p.executeQuery()) {
                r.next();
                return r.getLong(1);
            }
        }
    }

    public static void main(String[] a) throws Exception {
        String host = a[0];
        int port = Integer.parseInt(a[1]);
        sink = a[2];
        commitUser = a[3];
        epoch = Long.parseLong(a[4]);
        long ckpt = Long.parseLong(a[5]);
        long id = Long.parseLong(a[6]);
        final int n = 3;

        PGXADataSource ds = new PGXADataSource();
        ds.setServerNames(new String[] {host});
        ds.setPortNumbers(new int[] {port});
        ds.setDatabaseName("postgres");
        ds.setUser("postgres");
        System.out.println("driver: name=\"" + org.postgresql.util.DriverInfo.DRIVER_FULL_NAME + "\"");

        Connection plain = ds.getConnection(); /* autocommit: the job functions */
        XAConnection xc = ds.getXAConnection();
        XAResource xa = xc.getXAResource();
        Connection xconn = xc.getConnection();

        /* one-phase XA: the branch is an ordinary transaction, committed with COMMIT */
        Xid x1 = new ProbeXid(1);
        xa.start(x1, XAResource.TMNOFLAGS);
        writeAs(xconn, 1);
        insertRows(xconn, id, n);
        xa.end(x1, XAResource.TMSUCCESS);
        try {
            xa.commit(x1, true);
            long prepared = prepareAndCommit(plain, ckpt, 1, n);
            System.out.println("one_phase: committed=true prepared_rows=" + prepared + " target_rows="
                + countIds(plain, id, n) + " sent=" + n);
        } catch (XAException | SQLException e) {
            report("one_phase", e);
        }

        /* two-phase XA: prepare runs PREPARE TRANSACTION */
        Xid x2 = new ProbeXid(2);
        long id2 = id + n;
        xa.start(x2, XAResource.TMNOFLAGS);
        writeAs(xconn, 1);
        insertRows(xconn, id2, n);
        xa.end(x2, XAResource.TMSUCCESS);
        try {
            int v = xa.prepare(x2);
            System.out.println("two_phase_prepare: exception=none vote=" + v);
        } catch (XAException e) {
            report("two_phase_prepare", e);
        }
        try {
            xa.rollback(x2);
            System.out.println("two_phase_rollback: exception=none");
        } catch (XAException e) {
            report("two_phase_rollback", e);
        }
        long prepared2 = prepareAndCommit(plain, ckpt + 1, 1, 0);
        System.out.println("two_phase_after: prepared_rows=" + prepared2 + " target_rows=" + countIds(plain, id2, n));
        xc.close();

        /* a job function in pgJDBC's implicit transaction block */
        Connection c = ds.getConnection();
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
            s.executeQuery("SELECT * FROM paimon_sink.prepare_commit('" + sink + "', '" + commitUser + "', "
                + (ckpt + 2) + ", writer_id => 1, fence_epoch => " + epoch + ")").close();
            System.out.println("autocommit_false: exception=none");
        } catch (SQLException e) {
            report("autocommit_false", e);
        }
        c.rollback();
        c.setAutoCommit(true);
        try (Statement s = c.createStatement()) {
            s.executeQuery("SELECT * FROM paimon_sink.prepare_commit('" + sink + "', '" + commitUser + "', "
                + (ckpt + 2) + ", writer_id => 1, fence_epoch => " + epoch + ")").close();
            System.out.println("autocommit_true: exception=none");
        } catch (SQLException e) {
            report("autocommit_true", e);
        }
        c.close();
        plain.close();
    }
}
