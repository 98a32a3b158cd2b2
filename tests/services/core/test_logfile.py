"""The service's log file on a disk that takes nothing (``/dev/full``, which answers every write
with ENOSPC): one line on stderr instead of a traceback per record, and one when it works again."""

import logging

from yitong_services.core.logfile import LogFile


def test_a_log_file_that_cannot_be_written_says_so_once(tmp_path, capsys):
    handler = LogFile("/dev/full", maxBytes=1 << 20, backupCount=1)
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "a line", None, None)
    for _ in range(3):
        handler.emit(record)
    err = capsys.readouterr().err
    assert err.count("yitong-service: cannot write /dev/full (") == 1, err
    assert "No space left on device" in err and "Traceback" not in err and "Logging error" not in err

    handler.close()  # space is back: the same handler on a writable file
    handler.baseFilename = str(tmp_path / "yitong-service.log")
    handler.stream = handler._open()
    handler.emit(record)
    handler.emit(record)
    assert capsys.readouterr().err.count("can be written again") == 1
    handler.close()
    assert (tmp_path / "yitong-service.log").read_text().count("a line") == 2
