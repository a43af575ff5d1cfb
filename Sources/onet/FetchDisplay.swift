import Dispatch
import Foundation
@_spi(Tool) import OperationNetworking

/// What `onet fetch` shows while it runs: on a terminal, a progress bar per active file and a total
/// line, redrawn in place with ANSI escape codes; elsewhere (a pipe, a file, `TERM=dumb`) a plain
/// total line every `plainInterval` seconds. Messages (a file saved, a retry) go above the bars.
///
/// The bars are drawn on standard error (standard output stays free for the list of saved files),
/// so the terminal test is `isatty(2)`.
/// - Threading: what changes is one `Screen` value owned by a lock; the redraw timer runs on
///   `timerQueue`; writes happen with the lock held, so a message and a redraw never interleave.
final class FetchDisplay: Sendable {
    /// Where one file stands, as the display shows it.
    enum Phase {
        /// Queued, not started.
        case waiting
        /// Transferring (or paused): has a bar.
        case active
        /// Saved.
        case done
        /// Given up on.
        case failed
    }

    /// One file's line.
    struct File {
        /// The file name in the target directory.
        var name: String
        /// Where it stands.
        var phase: Phase = .waiting
        /// Bytes in the file so far (a resumed prefix included).
        var received: Int64
        /// The whole file's size, or -1 while unknown.
        var expected: Int64 = -1
        /// Bytes the file had before this run (not counted in the rate).
        let baseline: Int64
    }

    /// How often the bars are redrawn on a terminal.
    static let redrawInterval: DispatchTimeInterval = .milliseconds(100)
    /// How often a plain progress line is printed when standard error is not a terminal.
    let plainInterval: TimeInterval
    /// How far back the transfer rate looks, in seconds.
    static let rateWindow: TimeInterval = 3

    /// Whether bars are drawn in place (standard error is a terminal that understands ANSI codes).
    let interactive: Bool
    /// Whether the bars use block characters (a UTF-8 locale) or ASCII.
    private let unicode: Bool
    private let screen: Locked<Screen>
    private let timerQueue = DispatchQueue(label: "org.operationnetworking.onet.fetch.display")

    /// A display for `files` (name and bytes already on disk each).
    init(files: [(name: String, bytes: Int64)], interactive: Bool? = nil, plainInterval: TimeInterval = 1) {
        self.plainInterval = plainInterval
        let environment = ProcessInfo.processInfo.environment
        let interactive = interactive ?? (isatty(STDERR_FILENO) == 1 && environment["TERM"] != "dumb")
        let locale = environment["LC_ALL"] ?? environment["LC_CTYPE"] ?? environment["LANG"] ?? ""
        self.interactive = interactive
        unicode = locale.lowercased().replacingOccurrences(of: "-", with: "").contains("utf8")
        screen = Locked(Screen(files: files.map { File(name: $0.name, received: $0.bytes, baseline: $0.bytes) },
                               interactive: interactive, unicode: unicode))
    }

    // MARK: - Events (any thread)

    /// The file's transfer started.
    func started(_ index: Int) {
        screen.update { if $0.files[index].phase == .waiting { $0.files[index].phase = .active } }
    }

    /// The file holds `received` of `expected` bytes (-1: unknown).
    func progress(_ index: Int, received: Int64, expected: Int64) {
        screen.update { screen in
            // A late progress call must not bring a finished file's bar back.
            guard screen.files[index].phase == .waiting || screen.files[index].phase == .active else { return }
            screen.files[index].phase = .active
            screen.files[index].received = received
            screen.files[index].expected = expected
        }
    }

    /// The file ended: saved (`ok`) or failed.
    func finished(_ index: Int, ok: Bool, bytes: Int64) {
        screen.update { screen in
            screen.files[index].phase = ok ? .done : .failed
            if ok {
                screen.files[index].received = bytes
                screen.files[index].expected = bytes
            }
        }
    }

    /// Prints `text` (a full line) on standard output, or standard error when `error` (with the password
    /// of any URL in it as `***`), above the bars.
    func message(_ text: String, error: Bool = false) {
        let line = error ? URLRedaction.redactingPasswords(in: text) : text
        screen.update { screen in
            screen.clearBars()
            Screen.write(line + "\n", to: error ? FileHandle.standardError : FileHandle.standardOutput)
            if screen.timer != nil { screen.drawBars() }
        }
    }

    // MARK: - Drawing

    /// Starts redrawing (a terminal) or printing plain lines (anything else).
    func start() {
        let source = DispatchSource.makeTimerSource(queue: timerQueue)
        source.schedule(deadline: .now(), repeating: interactive ? FetchDisplay.redrawInterval : .milliseconds(250))
        source.setEventHandler { [weak self] in self?.tick() }
        screen.update { screen in
            screen.timer = source
            if interactive { Screen.write("\u{1B}[?25l", to: FileHandle.standardError) }   // hide the cursor while redrawing
        }
        source.resume()
    }

    /// Stops drawing: removes the bars and prints the final total line (plain, once).
    func stop() {
        let source = screen.update { screen -> DispatchSourceTimer? in
            defer { screen.timer = nil }
            return screen.timer
        }
        source?.cancel()
        // The handler may still be running on timerQueue; let it end before the last draw.
        timerQueue.sync {}
        screen.update { screen in
            screen.clearBars()
            if interactive { Screen.write("\u{1B}[?25h", to: FileHandle.standardError) }
            screen.sample()
            Screen.write(screen.totalLine() + "\n", to: FileHandle.standardError)
        }
    }

    /// One timer tick: redraw, or a plain line when its interval passed.
    private func tick() {
        let plainInterval = plainInterval
        screen.update { screen in
            guard screen.timer != nil else { return }
            screen.sample()
            if screen.interactive {
                screen.drawBars()
            } else {
                let now = Date().timeIntervalSinceReferenceDate
                guard now - screen.lastPlainLine >= plainInterval else { return }
                screen.lastPlainLine = now
                Screen.write(screen.totalLine() + "\n", to: FileHandle.standardError)
            }
        }
    }

    /// What is on the screen and what it is drawn from.
    private struct Screen {
        var files: [File]
        /// (time, bytes received in this run) samples of the last `rateWindow` seconds.
        var samples: [(time: TimeInterval, bytes: Int64)] = []
        /// Lines of bars currently on the screen, below the cursor's line start.
        var drawnLines = 0
        var lastPlainLine: TimeInterval = 0
        var timer: DispatchSourceTimer?
        let interactive: Bool
        let unicode: Bool

        init(files: [File], interactive: Bool, unicode: Bool) {
            self.files = files
            self.interactive = interactive
            self.unicode = unicode
        }

        /// Records how many bytes this run received by now, for the rate.
        mutating func sample() {
            let now = Date().timeIntervalSinceReferenceDate
            let bytes = FetchDisplay.sum(files.map { max(0, $0.received &- $0.baseline) })
            samples.append((now, bytes))
            samples.removeAll { now - $0.time > FetchDisplay.rateWindow }
        }

        /// Bytes per second over the window, or `nil` while too little time passed.
        func rate() -> Double? {
            guard let first = samples.first, let last = samples.last, last.time - first.time >= 0.5 else { return nil }
            return max(0, Double(last.bytes - first.bytes) / (last.time - first.time))
        }

        /// Moves to the first bar line and clears the bars.
        mutating func clearBars() {
            guard interactive, drawnLines > 0 else { return }
            Screen.write("\u{1B}[\(drawnLines)F\u{1B}[J", to: FileHandle.standardError)
            drawnLines = 0
        }

        /// Draws the active files' bars and the total line over the previous ones.
        mutating func drawBars() {
            guard interactive else { return }
            let (columns, rows) = FetchDisplay.terminalSize()
            let width = max(40, columns - 1)   // never the last column: no wrapping
            let active = files.filter { $0.phase == .active }
            // The block must fit on the screen, or moving back up to its first line would fall short.
            let shown = min(active.count, max(0, rows - 3))
            var lines = active.prefix(shown).map { barLine($0, width: width) }
            if shown < active.count { lines.append((unicode ? "…" : "...") + " and \(active.count - shown) more") }
            lines.append(totalLine())
            var text = drawnLines > 0 ? "\u{1B}[\(drawnLines)F" : "\r"
            for line in lines {
                text += "\u{1B}[2K" + String(line.prefix(width)) + "\n"
            }
            text += "\u{1B}[J"
            drawnLines = lines.count
            Screen.write(text, to: FileHandle.standardError)
        }

        /// `name  [█████░░░░░]  52%  1.2 MB / 2.3 MB` fitted to `width`.
        func barLine(_ file: File, width: Int) -> String {
            let amounts = file.expected >= 0
                ? "\(FetchDisplay.bytes(file.received)) / \(FetchDisplay.bytes(file.expected))"
                : FetchDisplay.bytes(file.received)
            let fraction = file.expected > 0 ? min(1, Double(max(0, file.received)) / Double(file.expected)) : 0
            let percent = file.expected > 0 ? "\(Int(fraction * 100))%" : "--%"
            let nameWidth = min(30, max(10, width / 4))
            var name = file.name
            if name.count > nameWidth { name = String(name.prefix(nameWidth - 1)) + (unicode ? "…" : "~") }
            name += String(repeating: " ", count: nameWidth - name.count)
            let barWidth = max(10, min(40, width - nameWidth - amounts.count - 12))
            let filled = Int(Double(barWidth) * fraction)
            let bar = String(repeating: unicode ? "█" : "#", count: filled)
                + String(repeating: unicode ? "░" : "-", count: barWidth - filled)
            let padded = String(repeating: " ", count: max(0, 4 - percent.count)) + percent
            return "\(name) [\(bar)] \(padded)  \(amounts)"
        }

        /// `Total  2/5 files  1.2 MB / 3.4 MB  640.0 KB/s  ETA 0:03` (`2/5 files, 1 failed` once one
        /// failed): only saved files count as done.
        func totalLine() -> String {
            let saved = files.filter { $0.phase == .done }.count
            let failed = files.filter { $0.phase == .failed }.count
            let finished = saved + failed
            let received = FetchDisplay.sum(files.map(\.received))
            let sizesKnown = files.allSatisfy { $0.expected >= 0 || $0.phase == .failed }
            let expected = FetchDisplay.sum(files.map { max(0, $0.expected) })
            var line = "Total  \(saved)/\(files.count) files" + (failed > 0 ? ", \(failed) failed" : "") + "  \(FetchDisplay.bytes(received))"
            line += sizesKnown ? " / \(FetchDisplay.bytes(expected))" : " / ?"
            let speed = rate()
            line += "  " + (speed.map { FetchDisplay.bytes(Int64(min($0, 9e18))) + "/s" } ?? "--/s")
            let remaining = FetchDisplay.sum(files.filter { $0.phase != .failed }.map { max(0, $0.expected &- $0.received) })
            if sizesKnown, let speed, speed > 0 {
                line += "  ETA " + FetchDisplay.duration(Double(remaining) / speed)
            } else {
                line += finished == files.count ? "  ETA 0:00" : "  ETA --:--"
            }
            return line
        }

        /// Writes unbuffered, so the order on the terminal is the order of the calls. A stream that went
        /// away (a closed pipe) loses the text rather than stopping the downloads.
        static func write(_ text: String, to handle: FileHandle) {
            try? handle.write(contentsOf: Data(text.utf8))
        }
    }

    // MARK: - Formatting

    /// The total of byte counts, held at `Int64.max`: sizes come from servers (`Content-Length`), and
    /// two that claim exabytes must not stop the display.
    static func sum(_ counts: [Int64]) -> Int64 {
        counts.reduce(Int64(0)) { total, count in
            let (result, overflow) = total.addingReportingOverflow(count)
            return overflow ? .max : result
        }
    }

    /// `512 B`, `1.2 KB`, `3.4 MB`, `1.0 GB` (powers of 1024).
    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f", value) + " " + units[unit]
    }

    /// `m:ss`, or `h:mm:ss` from an hour on; `--:--` beyond 100 hours.
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds < 360_000 else { return "--:--" }
        let total = Int(seconds.rounded(.up))
        let (hours, minutes, secs) = (total / 3600, total / 60 % 60, total % 60)
        return hours > 0 ? String(format: "%d:%02d:%02d", hours, minutes, secs) : String(format: "%d:%02d", minutes, secs)
    }

    /// The terminal's columns and rows from standard error, else `COLUMNS`/`LINES`, else 80×24.
    static func terminalSize() -> (columns: Int, rows: Int) {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 {
            return (Int(size.ws_col), Int(size.ws_row))
        }
        let environment = ProcessInfo.processInfo.environment
        return (environment["COLUMNS"].flatMap { Int($0) } ?? 80, environment["LINES"].flatMap { Int($0) } ?? 24)
    }
}
