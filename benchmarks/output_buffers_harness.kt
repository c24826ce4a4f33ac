// JVM harness of benchmarks/output_buffers.py: the generated wrapper (reused, pinned output buffers) against the
// previous wrapper's way of running (ORT-allocated outputs, each read through getXBuffer() then into an array),
// on a real ONNX Runtime. Prints one line per check and per measurement; asserts nothing.
package mgbench

import ai.onnxruntime.OnnxJavaType
import ai.onnxruntime.OnnxTensor
import ai.onnxruntime.OrtEnvironment
import ai.onnxruntime.OrtSession
import java.io.File
import java.lang.management.ManagementFactory
import java.nio.FloatBuffer

fun allocated(): Long =
    (ManagementFactory.getThreadMXBean() as com.sun.management.ThreadMXBean).getThreadAllocatedBytes(Thread.currentThread().id)

/** Bytes currently held by the JVM's direct (off-heap) ByteBuffers. */
fun directBytes(): Long =
    ManagementFactory.getPlatformMXBeans(java.lang.management.BufferPoolMXBean::class.java).first { it.name == "direct" }.totalCapacity

/**
 * Steady state: [warm] calls, then heap bytes allocated and ms per call over [n] calls, the best of 3 rounds;
 * also the direct buffer pool's growth per call (the largest of the rounds: a GC in a round frees some).
 */
fun measure(label: String, warm: Int, n: Int, call: () -> Unit) {
    repeat(warm) { call() }
    var bestBytes = Long.MAX_VALUE
    var bestMs = Double.MAX_VALUE
    var direct = 0L
    repeat(3) {
        System.gc()
        val d0 = directBytes()
        val b0 = allocated()
        val t0 = System.nanoTime()
        repeat(n) { call() }
        val t1 = System.nanoTime()
        val b1 = allocated()
        direct = maxOf(direct, (directBytes() - d0) / n)
        bestBytes = minOf(bestBytes, (b1 - b0) / n)
        bestMs = minOf(bestMs, (t1 - t0) / 1e6 / n)
    }
    println("$label: heap bytes/run=$bestBytes direct bytes/run>=$direct ms/run=${"%.3f".format(bestMs)}")
}

fun report(ok: Boolean, what: String) = println((if (ok) "PASS " else "FAIL ") + what)

/** What the wrapper did before reused outputs: ORT allocates every output; each is copied to a heap buffer, then an array. */
fun runLikeBefore(session: OrtSession, inputName: String, x: FloatArray, shape: LongArray): List<Any> {
    val env = OrtEnvironment.getEnvironment()
    OnnxTensor.createTensor(env, FloatBuffer.wrap(x), shape).use { input ->
        session.run(mapOf(inputName to input)).use { result ->
            return result.map { (_, value) ->
                val t = value as OnnxTensor
                when (t.info.type) {
                    OnnxJavaType.FLOAT -> t.floatBuffer.let { b -> FloatArray(b.remaining()).also { b.get(it) } }
                    OnnxJavaType.INT64 -> t.longBuffer.let { b -> LongArray(b.remaining()).also { b.get(it) } }
                    else -> t.byteBuffer.let { b -> ByteArray(b.remaining()).also { b.get(it) } }
                }
            }
        }
    }
}

fun mixed(dir: File, n: Int) {
    val g = mg.mixed.GoldenVectors.parse(File(dir, "golden.mgv").readBytes())
    val modelBytes = File(dir, "model.ort").readBytes()
    val x = g.input(mg.mixed.Model.X_NAME).asFloatArray()
    fun matches(o: mg.mixed.Model.Outputs): Boolean =
        mg.mixed.ModelSupport.mismatches(
            g.output(mg.mixed.Model.LOGITS_NAME).toDoubles(), mg.mixed.ModelSupport.toDoubles(o.logits),
            mg.mixed.Model.ATOL, mg.mixed.Model.RTOL,
        ).isEmpty() &&
            o.logitsShape.contentEquals(g.output(mg.mixed.Model.LOGITS_NAME).shape) &&
            g.output(mg.mixed.Model.CLS_NAME).toLongs().contentEquals(o.cls) &&
            g.output(mg.mixed.Model.POS_NAME).toLongs().contentEquals(mg.mixed.ModelSupport.toLongs(o.pos)) &&
            g.output(mg.mixed.Model.NZ_NAME).toLongs().contentEquals(o.nz) &&
            o.nzShape.contentEquals(g.output(mg.mixed.Model.NZ_NAME).shape)
    mg.mixed.Model.create(modelBytes, mg.mixed.Model.Options.CPU_ONLY).use { m ->
        val first = m.run(x)
        report(matches(first), "mixed: golden vectors (pinned float32, int64, bool outputs; NonZero output of shape ${first.nzShape.contentToString()})")
        val zeros = m.run(FloatArray(x.size))
        report(matches(first) && !zeros.logits.contentEquals(first.logits), "mixed: an earlier call's Outputs are unchanged by a later call")
        report(matches(m.run(x)), "mixed: golden vectors again (the reused buffers rewritten)")
        val failures = java.util.concurrent.atomic.AtomicInteger()
        val threads = (0 until 4).map { Thread { repeat(300) { if (!matches(m.run(x))) failures.incrementAndGet() } } }
        threads.forEach { it.start() }
        threads.forEach { it.join() }
        report(failures.get() == 0, "mixed: 4 threads x 300 concurrent calls match the golden vectors (${failures.get()} failed)")
        measure("mixed, generated wrapper (reused outputs)", 200, n) { m.run(x) }
    }
    OrtEnvironment.getEnvironment().createSession(modelBytes).use { s ->
        measure("mixed, ORT-allocated outputs (the previous wrapper)", 200, n) { runLikeBefore(s, "x", x, mg.mixed.Model.X_SHAPE) }
    }
}

fun seg(dir: File, n: Int) {
    val g = mg.seg.GoldenVectors.parse(File(dir, "golden.mgv").readBytes())
    val modelBytes = File(dir, "model.ort").readBytes()
    val x = g.input(mg.seg.Model.X_NAME).asFloatArray()
    val expected = g.output(mg.seg.Model.SCORES_NAME).toDoubles()
    mg.seg.Model.create(modelBytes, mg.seg.Model.Options.CPU_ONLY).use { m ->
        val o = m.run(x)
        report(
            mg.seg.ModelSupport.mismatches(expected, mg.seg.ModelSupport.toDoubles(o.scores), mg.seg.Model.ATOL, mg.seg.Model.RTOL).isEmpty(),
            "seg: golden vectors (output ${o.scoresShape.contentToString()} float32, ${expected.size * 4} bytes)",
        )
        measure("seg, generated wrapper (reused outputs)", 20, n / 10) { m.run(x) }
    }
    OrtEnvironment.getEnvironment().createSession(modelBytes).use { s ->
        measure("seg, ORT-allocated outputs (the previous wrapper)", 20, n / 10) { runLikeBefore(s, "x", x, mg.seg.Model.X_SHAPE) }
    }
}

fun big(dir: File, n: Int) {
    val g = mg.big.GoldenVectors.parse(File(dir, "golden.mgv").readBytes())
    val modelBytes = File(dir, "model.ort").readBytes()
    val x = g.input(mg.big.Model.X_NAME).asFloatArray()
    val expected = g.output(mg.big.Model.MEAN_NAME).toDoubles()
    fun matches(o: mg.big.Model.Outputs): Boolean =
        mg.big.ModelSupport.mismatches(expected, mg.big.ModelSupport.toDoubles(o.mean), mg.big.Model.ATOL, mg.big.Model.RTOL).isEmpty()
    mg.big.Model.create(modelBytes, mg.big.Model.Options.CPU_ONLY).use { m ->
        report(matches(m.run(x)), "big: golden vectors (input ${mg.big.Model.X_SHAPE.contentToString()} float32, ${x.size * 4} bytes)")
        val other = m.run(FloatArray(x.size) { 1f })
        report(other.mean.all { it == 1f }, "big: a second call with other input sees its own input (${other.mean.contentToString()})")
        report(matches(m.run(x)), "big: golden vectors again (the reused input buffer refilled)")
        val failures = java.util.concurrent.atomic.AtomicInteger()
        val ones = FloatArray(x.size) { 1f }
        val threads = (0 until 4).map { i ->
            Thread {
                repeat(100) {
                    val ok = if (i % 2 == 0) matches(m.run(x)) else m.run(ones).mean.all { it == 1f }
                    if (!ok) failures.incrementAndGet()
                }
            }
        }
        threads.forEach { it.start() }
        threads.forEach { it.join() }
        report(failures.get() == 0, "big: 4 threads x 100 concurrent calls, two inputs, each sees its own (${failures.get()} failed)")
        measure("big, generated wrapper (reused input and outputs)", 50, n / 4) { m.run(x) }
    }
    OrtEnvironment.getEnvironment().createSession(modelBytes).use { s ->
        measure("big, heap-array input copied by ORT (the previous wrapper)", 50, n / 4) { runLikeBefore(s, "x", x, mg.big.Model.X_SHAPE) }
    }
}

fun main(args: Array<String>) {
    println("ONNX Runtime Java API ${OrtEnvironment.getEnvironment().version}")
    val n = args[3].toInt()
    mixed(File(args[0]), n)
    seg(File(args[1]), n)
    big(File(args[2]), n)
}
